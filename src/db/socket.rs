//! A blocking client socket, TCP or unix, as the hand-written wire clients
//! use it: one `write_all` per request, reads into the caller's buffer, and
//! on unix sockets a `poll` before each read (see [`wait_readable`]).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

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
