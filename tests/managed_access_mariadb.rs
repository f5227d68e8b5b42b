//! A managed MariaDB lets only tidemark in: its account and `root` need the
//! server's random password (which only the tool's API hands out), and no
//! anonymous account is left; the stock client without it is refused over
//! TCP and over the socket.

mod common;

use common::*;
use tidemark::db::mysql::MyConn;

#[test]
fn only_tidemark_gets_in() {
    let dir = server_tempdir();
    let server = start_mariadb(dir.path(), "base", &[]);
    let good = server.connect_options();
    let password = good
        .password
        .clone()
        .expect("a managed server has a password");
    assert!(password.len() >= 32, "a long random password");
    let mut conn = MyConn::connect(&good).expect("tidemark's credentials work over TCP");
    assert_eq!(
        scalar(&mut conn, "SELECT count(*) FROM mysql.user WHERE user = ''"),
        "0"
    );
    let empty_root = scalar(
        &mut conn,
        "SELECT count(*) FROM mysql.user WHERE user = 'root' AND authentication_string = ''",
    );
    assert_eq!(empty_root, "0", "a root account without a password");
    MyConn::connect(&server.socket_options()).expect("and over the socket");

    for (user, pw, socket) in [
        ("tidemark", None, false),
        ("tidemark", Some("tidemark"), false),
        ("tidemark", None, true),
        ("root", None, true),
        ("root", None, false),
        ("", None, true),
    ] {
        let mut opts = if socket {
            server.socket_options()
        } else {
            server.connect_options()
        };
        opts.user = user.to_string();
        opts.password = pw.map(String::from);
        let err = MyConn::connect(&opts)
            .err()
            .unwrap_or_else(|| panic!("{user:?} with {pw:?} (socket: {socket}) got in"));
        assert_eq!(err.code, "1045", "{user:?}: {err}");
    }

    // The stock client, as another local program would try it.
    for client in ["/usr/bin/mariadb", "/usr/bin/mysql"] {
        if !std::path::Path::new(client).exists() {
            continue;
        }
        let port = server.port().to_string();
        let socket = server.socket().to_str().unwrap().to_string();
        for args in [
            vec![
                "--no-defaults",
                "-h",
                "127.0.0.1",
                "-P",
                &port,
                "-u",
                "tidemark",
            ],
            vec!["--no-defaults", "-S", &socket, "-u", "root"],
            vec!["--no-defaults", "-S", &socket, "-u", "tidemark"],
        ] {
            let out = std::process::Command::new(client)
                .args(&args)
                .args(["-e", "SELECT 1"])
                .env_remove("MYSQL_PWD")
                .output()
                .unwrap();
            assert!(!out.status.success(), "{client} {args:?} got in");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("Access denied"), "{client} {args:?}: {err}");
        }
        break;
    }
    drop(conn);
    drop(server);
    // No file the server or tidemark wrote keeps the password.
    let holding = files_holding(dir.path(), password.as_bytes());
    assert!(holding.is_empty(), "files hold the password: {holding:?}");
}
