use super::*;

const TWO: &str = r#"
name = "two"
[params]
n = 100

[[table]]
name = "kv"
sql = "CREATE TABLE kv (k INT PRIMARY KEY, v {text(20)})"
rows = "n"
columns = { k = "row", v = "string(5, 10)" }

[[transaction]]
name = "read"
weight = 3
set = { k = "zipfian(1, n)" }
[[transaction.statement]]
sql = "SELECT v FROM kv WHERE k = :k"
into = "got"
[[transaction.statement]]
sql = "SELECT k FROM kv WHERE v = :got"

[[transaction]]
name = "write"
set = { k = "uniform(1, n)", v = "string(8)" }
[[transaction.statement]]
sql = "INSERT INTO kv (k, v) VALUES (:k, :v) {upsert(k; v)}"
"#;

#[test]
fn a_file_with_two_weighted_transactions_compiles() {
    let w = parse("two.toml", TWO, &["n=50".into()]).unwrap();
    assert_eq!(w.param("n"), Some(50));
    assert_eq!(
        w.transactions
            .iter()
            .map(|t| (t.name.as_str(), t.weight))
            .collect::<Vec<_>>(),
        vec![("read", 3), ("write", 1)]
    );
    assert_eq!(w.transactions[0].statements[0].into.as_deref(), Some("got"));
    w.check_families(&[Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite])
        .unwrap();
}

#[test]
fn the_shipped_pgbench_files_check_on_every_family() {
    for (name, _) in SHIPPED {
        let w = load(name, &["scale=2".into()]).unwrap();
        assert_eq!(w.name, name);
        w.check_families(&[Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite])
            .unwrap();
        let accounts = w
            .tables
            .iter()
            .find(|t| t.name == "pgbench_accounts")
            .unwrap();
        assert_eq!(
            accounts.rows.as_ref().unwrap().eval(&|n| w.param(n)),
            Ok(200_000)
        );
    }
    let tpcb = load("tpcb-like", &[]).unwrap();
    assert_eq!(tpcb.transactions[0].statements.len(), 7);
}

fn error(text: &str) -> String {
    parse("bad.toml", text, &[]).unwrap_err()
}

#[test]
fn bad_files_give_one_line_errors_with_file_line_and_fix() {
    let e = error("name = \"x\"\n[[transaction]\nname = \"t\"\n");
    assert!(
        e.starts_with("bad.toml:2: ") && e.contains("fix the TOML"),
        "{e}"
    );
    let pareto = TWO.replace("zipfian(1, n)", "pareto(1, n)");
    let e = error(&pareto);
    let line = TWO.lines().position(|l| l.contains("zipfian")).unwrap() + 1;
    assert!(e.starts_with(&format!("bad.toml:{line}: ")), "{e}");
    assert!(
        e.contains("unknown generator 'pareto'") && e.contains("uniform, zipfian"),
        "{e}"
    );
    let unset = TWO.replace("WHERE v = :got", "WHERE v = :nope");
    let e = error(&unset);
    assert!(
        e.contains(":nope, which is not set") && e.contains("into = \"nope\""),
        "{e}"
    );
    let e = error(&TWO.replace("weight = 3", "weight = 0"));
    assert!(e.contains("weight 0") && e.contains("from 1 up"), "{e}");
    let e = error(&TWO.replace("rows = \"n\"", "rows = \"m\""));
    assert!(e.contains("unknown name 'm'"), "{e}");
    let e = error(&TWO.replace("[params]", "[parms]"));
    assert!(e.starts_with("bad.toml:3: ") && e.contains("parms"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_statement_a_family_cannot_run_is_refused_before_the_run() {
    let text = TWO.replace(
        "{upsert(k; v)}",
        "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    );
    let w = parse("f.toml", &text, &[]).unwrap();
    w.check_families(&[Dialect::Postgres, Dialect::Sqlite])
        .unwrap();
    let e = w
        .check_families(&[Dialect::Postgres, Dialect::Mysql])
        .unwrap_err();
    let line = text
        .lines()
        .position(|l| l.contains("ON CONFLICT"))
        .unwrap()
        + 1;
    assert_eq!(
        e,
        format!(
            "f.toml:{line}: statement 1 of transaction 'write': mysql cannot run ON CONFLICT: use {{upsert(key; col, …)}}"
        )
    );
    let only_pg = TWO.replace("sql = \"SELECT k FROM", "postgres = \"SELECT k FROM");
    let w = parse("f.toml", &only_pg, &[]).unwrap();
    let e = w.check_families(&[Dialect::Sqlite]).unwrap_err();
    assert!(
        e.contains("statement 2 of transaction 'read' has no SQL for sqlite"),
        "{e}"
    );
}

#[test]
fn overrides_and_retry_rules_are_checked() {
    assert!(
        parse("f", TWO, &["m=3".into()])
            .unwrap_err()
            .contains("has no param 'm'")
    );
    assert!(
        parse("f", TWO, &["n=x".into()])
            .unwrap_err()
            .contains("not an integer")
    );
    let r = format!("{TWO}\n[retry]\nmax_tries = 5\non = [\"deadlock\"]\n");
    let w = parse("f", &r, &[]).unwrap();
    assert_eq!(
        w.retry,
        RetryRules {
            max_tries: 5,
            on: vec![ErrorClass::Deadlock]
        }
    );
    let paced = TWO.replace("name = \"two\"", "name = \"two\"\nrate = 250");
    assert_eq!(parse("f", &paced, &[]).unwrap().rate, Some(250.0));
    let bad_rate = TWO.replace("name = \"two\"", "name = \"two\"\nrate = -1");
    assert!(
        parse("f", &bad_rate, &[])
            .unwrap_err()
            .starts_with("f:3: rate:")
    );
    let bad = format!("{TWO}\n[retry]\non = [\"timeout\"]\n");
    assert!(
        parse("f", &bad, &[])
            .unwrap_err()
            .contains("unknown error class 'timeout'")
    );
}
