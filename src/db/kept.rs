//! Client connections kept across the short runs of one step measured in
//! slices (`--slices`): a [`KeptConnections`] hands out the connections an
//! earlier slice gave back, each with the statements already prepared on
//! it, so a slice after the first neither connects nor prepares and needs
//! no warm-up for new server sessions. A connection that lost its server
//! is not given back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Conn, Connector, DbError, Dialect, ErrorKind, MuxConn, Param, StmtId, TextRows};

/// A [`Connector`] that gives out idle connections before opening new
/// ones; a connection it gave out returns to it when dropped. Dropping it
/// closes the idle ones.
pub struct KeptConnections {
    inner: Arc<dyn Connector>,
    idle: Idle<dyn Conn>,
    idle_mux: Idle<dyn MuxConn>,
}

/// Connections given back, each with what was prepared on it.
type Idle<C> = Arc<Mutex<Vec<Kept<C>>>>;

/// One kept connection and its prepared statements by SQL text.
struct Kept<C: ?Sized> {
    conn: Box<C>,
    prepared: HashMap<String, StmtId>,
}

impl KeptConnections {
    /// Keeps the connections `inner` opens.
    pub fn new(inner: Arc<dyn Connector>) -> KeptConnections {
        KeptConnections {
            inner,
            idle: Arc::default(),
            idle_mux: Arc::default(),
        }
    }

    /// How many connections are idle, ready for the next slice.
    pub fn idle(&self) -> usize {
        self.idle.lock().expect("kept connections").len()
            + self.idle_mux.lock().expect("kept connections").len()
    }
}

/// An idle connection from `idle`, or a new one from `open`, lent out
/// until dropped.
fn lend<C: ?Sized + Conn>(
    idle: &Idle<C>,
    open: impl FnOnce() -> Result<Box<C>, DbError>,
) -> Result<Lent<C>, DbError> {
    let kept = idle.lock().expect("kept connections").pop();
    let kept = match kept {
        Some(k) => k,
        None => Kept {
            conn: open()?,
            prepared: HashMap::new(),
        },
    };
    Ok(Lent {
        kept: Some(kept),
        home: Arc::clone(idle),
        lost: false,
    })
}

impl Connector for KeptConnections {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(lend(&self.idle, || self.inner.connect())?))
    }

    fn connect_mux(&self) -> Option<Result<Box<dyn MuxConn>, DbError>> {
        if !self.inner.multiplexes() {
            return None;
        }
        let lent = lend(&self.idle_mux, || {
            self.inner
                .connect_mux()
                .unwrap_or_else(|| Err(DbError::new(ErrorKind::Other, "", "no multiplexing")))
        });
        Some(lent.map(|l| Box::new(l) as Box<dyn MuxConn>))
    }

    fn multiplexes(&self) -> bool {
        self.inner.multiplexes()
    }

    /// A named connection is for a role's own use: opened anew, not kept.
    fn connect_as(&self, name: &str) -> Result<Box<dyn Conn>, DbError> {
        self.inner.connect_as(name)
    }
}

/// A kept connection lent to one client: statements it prepared before
/// are not prepared again; given back when dropped unless it lost its
/// server.
struct Lent<C: ?Sized> {
    kept: Option<Kept<C>>,
    home: Idle<C>,
    lost: bool,
}

impl<C: ?Sized + Conn> Lent<C> {
    fn kept(&mut self) -> &mut Kept<C> {
        self.kept.as_mut().expect("a lent connection until dropped")
    }

    /// Notes a lost connection, so it is not given back.
    fn seen<T>(&mut self, r: Result<T, DbError>) -> Result<T, DbError> {
        if let Err(e) = &r
            && e.kind == ErrorKind::Connection
        {
            self.lost = true;
        }
        r
    }
}

impl<C: ?Sized> Drop for Lent<C> {
    fn drop(&mut self) {
        if let Some(kept) = self.kept.take()
            && !self.lost
        {
            self.home.lock().expect("kept connections").push(kept);
        }
    }
}

impl<C: ?Sized + Conn> Conn for Lent<C> {
    fn dialect(&self) -> Dialect {
        self.kept.as_ref().expect("lent").conn.dialect()
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        if let Some(&id) = self.kept().prepared.get(sql) {
            return Ok(id);
        }
        let r = self.kept().conn.prepare(sql);
        let id = self.seen(r)?;
        self.kept().prepared.insert(sql.to_string(), id);
        Ok(id)
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        let r = self.kept().conn.execute(stmt, params);
        self.seen(r)
    }

    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError> {
        let r = self.kept().conn.execute_text(sql);
        self.seen(r)
    }

    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError> {
        let r = self.kept().conn.query_text(sql);
        self.seen(r)
    }
}

impl MuxConn for Lent<dyn MuxConn> {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        self.kept.as_ref().expect("lent").conn.raw_fd()
    }

    fn send_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError> {
        let r = self.kept().conn.send_execute(stmt, params);
        self.seen(r)
    }

    fn on_readable(&mut self) -> Result<Option<u64>, DbError> {
        let r = self.kept().conn.on_readable();
        self.seen(r)
    }

    /// Itself, so statements prepared through it are remembered.
    fn as_conn(&mut self) -> &mut dyn Conn {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sqlite::{SqliteConnector, SqliteOptions};

    #[test]
    fn a_connection_given_back_is_lent_again_with_its_statements() {
        let dir = tempfile::tempdir().unwrap();
        let inner = SqliteConnector::new(SqliteOptions {
            path: dir.path().join("t.db"),
            pragmas: Vec::new(),
            busy_timeout: std::time::Duration::from_secs(1),
        });
        let kept = KeptConnections::new(Arc::new(inner));
        let mut a = kept.connect().unwrap();
        a.execute_text("CREATE TEMP TABLE t (x INTEGER)").unwrap();
        let id = a.prepare("SELECT count(*) FROM t").unwrap();
        assert_eq!(kept.idle(), 0);
        drop(a);
        assert_eq!(kept.idle(), 1);
        // The same connection (its temporary table is there), the same
        // statement without preparing it again.
        let mut b = kept.connect().unwrap();
        assert_eq!(kept.idle(), 0);
        assert_eq!(b.prepare("SELECT count(*) FROM t").unwrap(), id);
        assert_eq!(b.execute(id, &[]).unwrap(), 1);
        // A second client meanwhile gets a connection of its own.
        let mut c = kept.connect().unwrap();
        assert!(c.execute_text("SELECT count(*) FROM t").is_err());
        drop((b, c));
        assert_eq!(kept.idle(), 2);
    }
}
