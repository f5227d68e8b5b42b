//! The named generators of a workload file's values, in pgbench's and
//! sysbench's terms: `uniform(lo, hi)`, `zipfian(lo, hi[, exponent])`,
//! `gaussian(lo, hi, parameter)`, `sequential(lo, hi)`, `string(len)` or
//! `string(min, max)`, a quoted constant `'text'`, or an integer
//! expression of the file's params (and `row` while loading).

use super::expr::Expr;
use crate::workload::keys::{KeyDist, KeyGen};

/// The generator names, for error messages.
pub const NAMES: &str = "uniform, zipfian, gaussian, sequential, string";

/// A value as parsed from the file (bounds not yet evaluated).
#[derive(Clone, Debug, PartialEq)]
pub enum GenSpec {
    Uniform(Expr, Expr),
    Zipfian(Expr, Expr, f64),
    Gaussian(Expr, Expr, f64),
    Sequential(Expr, Expr),
    Str(Expr, Expr),
    Text(String),
    Expr(Expr),
}

impl GenSpec {
    /// Parses a value; the error names the problem and the fix.
    pub fn parse(text: &str) -> Result<GenSpec, String> {
        let t = text.trim();
        if let Some(inner) = t.strip_prefix('\'') {
            let body = inner.strip_suffix('\'').ok_or_else(|| {
                format!("'{t}' opens a quoted text but does not close it: end it with '")
            })?;
            return Ok(GenSpec::Text(body.replace("''", "'")));
        }
        let Some(open) = t.find('(') else {
            return Ok(GenSpec::Expr(Expr::parse(t)?));
        };
        let name = t[..open].trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(GenSpec::Expr(Expr::parse(t)?));
        }
        let args_text = t[open + 1..].strip_suffix(')').ok_or_else(|| {
            format!("'{t}': a generator call ends with ')', as in uniform(1, 100)")
        })?;
        let args = split_args(args_text);
        let expr = |i: usize| Expr::parse(&args[i]);
        let float = |i: usize, default: Option<f64>| -> Result<f64, String> {
            match args.get(i) {
                Some(a) => a
                    .parse::<f64>()
                    .map_err(|_| format!("{name}: '{a}' is not a number")),
                None => default.ok_or_else(|| format!("{name} needs {} arguments", i + 1)),
            }
        };
        let want = |lo: usize, hi: usize, usage: &str| {
            if args.len() < lo || args.len() > hi {
                Err(format!(
                    "{name} takes {usage}, not {} argument(s)",
                    args.len()
                ))
            } else {
                Ok(())
            }
        };
        Ok(match name {
            "uniform" => {
                want(2, 2, "(lo, hi)")?;
                GenSpec::Uniform(expr(0)?, expr(1)?)
            }
            "zipfian" => {
                want(2, 3, "(lo, hi[, exponent])")?;
                let s = float(2, Some(crate::workload::keys::SYSBENCH_ZIPF_EXP))?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(format!("zipfian exponent {s}: give a number above 0"));
                }
                GenSpec::Zipfian(expr(0)?, expr(1)?, s)
            }
            "gaussian" => {
                want(3, 3, "(lo, hi, parameter)")?;
                let p = float(2, None)?;
                if !(p >= 2.0 && p.is_finite()) {
                    return Err(format!(
                        "gaussian parameter {p}: give 2.0 or more, as pgbench requires"
                    ));
                }
                GenSpec::Gaussian(expr(0)?, expr(1)?, p)
            }
            "sequential" => {
                want(2, 2, "(lo, hi)")?;
                GenSpec::Sequential(expr(0)?, expr(1)?)
            }
            "string" => {
                want(1, 2, "(length) or (min_length, max_length)")?;
                let lo = expr(0)?;
                let hi = if args.len() == 2 {
                    expr(1)?
                } else {
                    lo.clone()
                };
                GenSpec::Str(lo, hi)
            }
            other => {
                return Err(format!(
                    "unknown generator '{other}': use one of {NAMES}, a quoted 'text' or an integer expression"
                ));
            }
        })
    }

    /// The names the value reads (params, `row`).
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            GenSpec::Uniform(a, b)
            | GenSpec::Zipfian(a, b, _)
            | GenSpec::Gaussian(a, b, _)
            | GenSpec::Sequential(a, b)
            | GenSpec::Str(a, b) => {
                a.names(&mut out);
                b.names(&mut out);
            }
            GenSpec::Text(_) => {}
            GenSpec::Expr(e) => e.names(&mut out),
        }
        out
    }

    /// The generator with its bounds evaluated; `client` and `clients`
    /// spread a sequential generator's values over the clients, `seed`
    /// seeds its random stream.
    pub fn build(
        &self,
        params: &dyn Fn(&str) -> Option<i64>,
        seed: u64,
        client: u32,
        clients: u32,
    ) -> Result<Gen, String> {
        let bounds = |a: &Expr, b: &Expr| -> Result<(i64, i64), String> {
            let (lo, hi) = (a.eval(params)?, b.eval(params)?);
            if hi < lo {
                return Err(format!(
                    "bounds {lo}..{hi}: the upper bound is below the lower"
                ));
            }
            Ok((lo, hi))
        };
        let rng = KeyGen::new(seed, KeyDist::Uniform, 1);
        Ok(match self {
            GenSpec::Uniform(a, b) => {
                let (lo, hi) = bounds(a, b)?;
                Gen::Uniform { lo, hi, rng }
            }
            GenSpec::Zipfian(a, b, s) => {
                let (lo, hi) = bounds(a, b)?;
                let n = (hi - lo + 1) as u64;
                Gen::Zipfian {
                    lo,
                    n,
                    rng: KeyGen::new(seed, KeyDist::Zipfian(*s), n),
                }
            }
            GenSpec::Gaussian(a, b, p) => {
                let (lo, hi) = bounds(a, b)?;
                Gen::Gaussian {
                    lo,
                    hi,
                    param: *p,
                    rng,
                }
            }
            GenSpec::Sequential(a, b) => {
                let (lo, hi) = bounds(a, b)?;
                let n = (hi - lo + 1) as u64;
                Gen::Sequential {
                    lo,
                    n,
                    next: u64::from(client) % n,
                    step: u64::from(clients.max(1)),
                }
            }
            GenSpec::Str(a, b) => {
                let (lo, hi) = bounds(a, b)?;
                if lo < 0 {
                    return Err("a string's length cannot be negative".into());
                }
                Gen::Str { lo, hi, rng }
            }
            GenSpec::Text(t) => Gen::Text(t.clone()),
            GenSpec::Expr(e) => Gen::Expr(e.clone()),
        })
    }
}

/// Splits generator arguments at top-level commas.
fn split_args(text: &str) -> Vec<String> {
    let (mut out, mut depth, mut cur) = (Vec::new(), 0i32, String::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A value: an integer or a text.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Text(String),
}

/// A generator ready to draw, owned by one client (or the loader).
pub enum Gen {
    Uniform {
        lo: i64,
        hi: i64,
        rng: KeyGen,
    },
    Zipfian {
        lo: i64,
        n: u64,
        rng: KeyGen,
    },
    Gaussian {
        lo: i64,
        hi: i64,
        param: f64,
        rng: KeyGen,
    },
    Sequential {
        lo: i64,
        n: u64,
        next: u64,
        step: u64,
    },
    Str {
        lo: i64,
        hi: i64,
        rng: KeyGen,
    },
    Text(String),
    /// An expression of the params and `row`.
    Expr(Expr),
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

impl Gen {
    /// Draws the next value into `out`; `names` resolves an expression's
    /// names (params, `row`).
    pub fn draw(
        &mut self,
        out: &mut Value,
        names: &dyn Fn(&str) -> Option<i64>,
    ) -> Result<(), String> {
        let int = match self {
            Gen::Uniform { lo, hi, rng } => rng.uniform(*lo, *hi),
            Gen::Zipfian { lo, n, rng } => *lo + rng.key(*n) - 1,
            Gen::Gaussian { lo, hi, param, rng } => {
                let p = *param;
                let stdev = loop {
                    let r1 = 1.0 - rng.unit();
                    let r2 = 1.0 - rng.unit();
                    let s = (-2.0 * r1.ln()).sqrt() * (2.0 * std::f64::consts::PI * r2).sin();
                    if (-p..p).contains(&s) {
                        break s;
                    }
                };
                let r = (stdev + p) / (p * 2.0);
                *lo + ((*hi - *lo + 1) as f64 * r) as i64
            }
            Gen::Sequential { lo, n, next, step } => {
                let v = *lo + *next as i64;
                *next = (*next + *step) % *n;
                v
            }
            Gen::Str { lo, hi, rng } => {
                let len = rng.uniform(*lo, *hi) as usize;
                if !matches!(out, Value::Text(_)) {
                    *out = Value::Text(String::with_capacity(len));
                }
                if let Value::Text(s) = out {
                    s.clear();
                    for _ in 0..len {
                        s.push(ALNUM[rng.uniform(0, ALNUM.len() as i64 - 1) as usize] as char);
                    }
                }
                return Ok(());
            }
            Gen::Text(t) => {
                *out = Value::Text(t.clone());
                return Ok(());
            }
            Gen::Expr(e) => e.eval(names)?,
        };
        *out = Value::Int(int);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(text: &str, n: usize) -> Vec<i64> {
        let spec = GenSpec::parse(text).unwrap();
        let mut g = spec.build(&|_| Some(1), 7, 0, 1).unwrap();
        let mut v = Value::Int(0);
        (0..n)
            .map(|_| {
                g.draw(&mut v, &|_| Some(1)).unwrap();
                match v {
                    Value::Int(i) => i,
                    Value::Text(ref s) => s.len() as i64,
                }
            })
            .collect()
    }

    #[test]
    fn generators_stay_in_their_bounds() {
        for text in [
            "uniform(1, 10)",
            "zipfian(1, 10, 0.9)",
            "gaussian(1, 10, 2.5)",
        ] {
            let d = draws(text, 2000);
            assert!(d.iter().all(|v| (1..=10).contains(v)), "{text}: {d:?}");
            assert!(d.contains(&1) && d.contains(&10), "{text}");
        }
        assert_eq!(draws("sequential(5, 7)", 5), vec![5, 6, 7, 5, 6]);
        assert!(
            draws("string(3, 5)", 100)
                .iter()
                .all(|l| (3..=5).contains(l))
        );
        assert_eq!(draws("2 * scale + 1", 1), vec![3]);
    }

    #[test]
    fn zipfian_prefers_low_keys_and_gaussian_the_middle() {
        let z = draws("zipfian(1, 1000)", 20_000);
        let low = z.iter().filter(|v| **v <= 10).count();
        assert!(
            low > 20_000 / 10,
            "zipfian: only {low} of 20000 in the first 1 %"
        );
        let g = draws("gaussian(1, 1000, 4)", 20_000);
        let mid = g.iter().filter(|v| (376..=625).contains(*v)).count();
        assert!(
            mid > 20_000 * 6 / 10,
            "gaussian: only {mid} in the middle quarter"
        );
    }

    #[test]
    fn unknown_generators_and_bad_arguments_are_named() {
        let e = GenSpec::parse("random(1, 10)").unwrap_err();
        assert!(
            e.contains("unknown generator 'random'") && e.contains("uniform"),
            "{e}"
        );
        assert!(
            GenSpec::parse("uniform(1)")
                .unwrap_err()
                .contains("(lo, hi)")
        );
        assert!(
            GenSpec::parse("gaussian(1, 9, 1.5)")
                .unwrap_err()
                .contains("2.0 or more")
        );
        assert_eq!(
            GenSpec::parse("'it''s'").unwrap(),
            GenSpec::Text("it's".into())
        );
    }
}
