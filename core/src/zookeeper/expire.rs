//! Ending a client's session from outside, as a server would when the session times out: what
//! the tests of the lost signal need, without waiting out a session timeout.
//!
//! A second handle that reopens the session and then closes it races our own client: opening it
//! drops our connection, our client reconnects at once and takes the session back, and a close
//! that arrives after that is never processed. So the session's ConnectRequest (which carries
//! its id and password; zookeeper-client keeps the password to itself) is caught on a loopback
//! socket from a second handle, then sent to the server again with a CloseSession right behind it
//! in the same write: the server reads both before our client can be back.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zookeeper_client as zk;

use crate::model::error::{Error, ErrorKind, Result};

/// The CloseSession request: length 8, xid 1, op code -11.
const CLOSE_SESSION: [u8; 12] = [0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5];

fn failed(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Backend,
        format!("ZooKeeper: could not close the session from outside: {what}"),
    )
}

/// The ConnectRequest a handle on `session` sends (length prefix included).
async fn connect_request(session: zk::SessionInfo, timeout: Duration) -> Result<Vec<u8>> {
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(failed)?;
    let addr = listener.local_addr().map_err(failed)?;
    let capture = async {
        let (mut socket, _) = listener.accept().await?;
        let mut len = [0u8; 4];
        socket.read_exact(&mut len).await?;
        let mut packet = len.to_vec();
        packet.resize(4 + u32::from_be_bytes(len) as usize, 0);
        socket.read_exact(&mut packet[4..]).await?;
        std::io::Result::Ok(packet)
    };
    let addr = addr.to_string();
    let connector = zk::Client::connector()
        .with_session(session)
        .with_session_timeout(timeout)
        .with_connection_timeout(Duration::from_secs(5));
    let handle = connector.connect(&addr);
    tokio::select! {
        packet = capture => packet.map_err(failed),
        // The handle gives up only after the capture had five seconds.
        _ = handle => Err(failed("the second handle sent no ConnectRequest")),
    }
}

/// Close `session` on the server at `server` (`host:port`), which ends it for every handle.
pub(crate) async fn close_session(
    server: &str,
    session: zk::SessionInfo,
    timeout: Duration,
) -> Result<()> {
    let mut bytes = connect_request(session, timeout).await?;
    bytes.extend_from_slice(&CLOSE_SESSION);
    let mut socket = TcpStream::connect(server).await.map_err(failed)?;
    socket.write_all(&bytes).await.map_err(failed)?;
    // The server answers both and then closes the connection; wait for that, bounded.
    let mut sink = Vec::new();
    match tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut sink)).await {
        Ok(_) => Ok(()),
        Err(_) => Err(failed("the server did not answer the close")),
    }
}
