//! A blocking client socket, TCP or unix, as the hand-written wire clients
//! use it: one `write_all` per request, reads into the caller's buffer, and
//! on unix sockets a `poll` before each read (see [`wait_readable`]); and
//! [`Link`], the socket with the buffers both wire clients keep beside it.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::DbError;

/// Initial size of a [`Link`]'s read buffer; it grows only for larger
/// messages.
const READ_BUF: usize = 64 * 1024;

/// How a wire client words a lost connection (its error codes and texts).
pub(crate) struct Lost {
    /// A request on a connection an earlier error broke.
    pub closed: fn() -> DbError,
    /// A failed write.
    pub write: fn(io::Error) -> DbError,
    /// The server closed the connection.
    pub ended: fn() -> DbError,
    /// A failed read.
    pub read: fn(io::Error) -> DbError,
}

/// A wire client's socket with its write buffer (one request, sent in one
/// `write_all`), its read buffer (received bytes are `rbuf[rpos..rend]`,
/// the rest is free space) and whether an error broke it. Both buffers are
/// reused, so nothing is allocated per statement once warmed up.
pub(crate) struct Link {
    pub stream: Stream,
    pub wbuf: Vec<u8>,
    pub rbuf: Vec<u8>,
    pub rpos: usize,
    pub rend: usize,
    /// Set by the first connection-level error; the client then sends
    /// nothing more (not even its goodbye).
    pub broken: bool,
    lost: &'static Lost,
}

impl Link {
    /// A link over `stream` whose errors `lost` words.
    pub(crate) fn new(stream: Stream, lost: &'static Lost) -> Link {
        Link {
            stream,
            wbuf: Vec::with_capacity(4096),
            rbuf: vec![0; READ_BUF],
            rpos: 0,
            rend: 0,
            broken: false,
            lost,
        }
    }

    /// Fails fast once the connection has been lost.
    #[inline]
    pub(crate) fn check_open(&self) -> Result<(), DbError> {
        if self.broken {
            return Err((self.lost.closed)());
        }
        Ok(())
    }

    /// Writes `wbuf` in one call.
    #[inline]
    pub(crate) fn send(&mut self) -> Result<(), DbError> {
        self.stream.write_all(&self.wbuf).map_err(|e| {
            self.broken = true;
            (self.lost.write)(e)
        })
    }

    /// One successful `read` into the free end of `rbuf` (retried on
    /// EINTR); `ready`: the caller knows the socket is readable, so no
    /// poll first ([`Stream::read_ready`]). End of stream or an error
    /// marks the connection broken.
    pub(crate) fn read_some(&mut self, ready: bool) -> Result<(), DbError> {
        match self.stream.read_some(&mut self.rbuf[self.rend..], ready) {
            Ok(0) => {
                self.broken = true;
                Err((self.lost.ended)())
            }
            Ok(n) => {
                self.rend += n;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err((self.lost.read)(e))
            }
        }
    }

    /// Moves the received bytes not yet consumed to the front of `rbuf`.
    pub(crate) fn compact(&mut self) {
        self.rbuf.copy_within(self.rpos..self.rend, 0);
        self.rend -= self.rpos;
        self.rpos = 0;
    }

    /// One `read` of what has arrived, for an event loop that saw the
    /// socket readable, after making room: an empty buffer starts again
    /// at its front; one with less than 4 KiB free moves its bytes to the
    /// front, and doubles if `too_full` says they still fill too much of
    /// it.
    pub(crate) fn read_arrived(&mut self, too_full: fn(&Link) -> bool) -> Result<(), DbError> {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        } else if self.rbuf.len() - self.rend < 4096 {
            self.compact();
            if too_full(self) {
                let want = self.rbuf.len() * 2;
                self.rbuf.resize(want, 0);
            }
        }
        self.read_some(true)
    }
}

/// A connected socket to a database server.
pub enum Stream {
    /// TCP with Nagle off.
    Tcp(TcpStream),
    /// A unix stream socket; the flag says whether to poll before reading.
    Unix(UnixStream, bool),
}

impl Stream {
    /// Connects over TCP to the first address of `host:port` that answers,
    /// giving up on each after `timeout` when one is given.
    pub fn tcp(host: &str, port: u16, timeout: Option<Duration>) -> io::Result<Stream> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "host has no addresses");
        for addr in (host, port).to_socket_addrs()? {
            let r = match timeout {
                Some(t) => TcpStream::connect_timeout(&addr, t),
                None => TcpStream::connect(addr),
            };
            match r {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Ok(Stream::Tcp(s));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Connects to the unix socket at `path`.
    pub fn unix(path: &Path) -> io::Result<Stream> {
        Ok(Stream::Unix(UnixStream::connect(path)?, true))
    }

    /// Whether this is a unix socket (a local, trusted channel).
    pub fn is_unix(&self) -> bool {
        matches!(self, Stream::Unix(..))
    }

    /// Reads what has arrived (at least one byte, or 0 at end of stream).
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s, poll_first) => {
                if *poll_first {
                    wait_readable(s.as_raw_fd());
                }
                s.read(buf)
            }
        }
    }

    /// Reads what has arrived without polling first: for a caller that
    /// knows the socket is readable (an event loop), so one `read` cannot
    /// block.
    #[inline]
    pub fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s, _) => s.read(buf),
        }
    }

    /// Reads what has arrived into `buf` (`ready`: the caller knows the
    /// socket is readable, see [`Stream::read_ready`]), retrying a read a
    /// signal interrupted; `Ok(0)` is the end of the stream.
    #[inline]
    pub fn read_some(&mut self, buf: &mut [u8], ready: bool) -> io::Result<usize> {
        loop {
            let got = if ready {
                self.read_ready(buf)
            } else {
                self.read(buf)
            };
            match got {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    /// The socket's file descriptor.
    pub fn raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s, _) => s.as_raw_fd(),
        }
    }

    /// Writes all of `buf`.
    #[inline]
    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s, _) => s.write_all(buf),
        }
    }

    /// Read and write timeouts (`None`: block forever, the benchmark case).
    pub fn set_timeouts(&mut self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t).and_then(|_| s.set_write_timeout(t)),
            Stream::Unix(s, poll_first) => {
                *poll_first = t.is_none(); // poll(-1) would ignore the timeout
                s.set_read_timeout(t).and_then(|_| s.set_write_timeout(t))
            }
        }
    }
}

/// Blocks until `fd` has data (or an error or EOF to report). A blocking read
/// on a unix stream socket is also woken when the server consumes our request
/// (the socket became writable), costing an extra pair of context switches
/// per statement; poll(POLLIN) sleeps through that. TCP has no such wake-up,
/// so there a plain blocking read is cheapest.
pub fn wait_readable(fd: RawFd) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd and we pass a count of 1. Errors other
    // than EINTR fall through to the read, which reports them.
    while unsafe { libc::poll(&mut p, 1, -1) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}
