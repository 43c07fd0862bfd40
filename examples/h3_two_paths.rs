//! HTTP/3 over a two-path mpquic connection: the unmodified `h3` crate's client and server on
//! loopback, a page's HTML, CSS and an image requested with RFC 9218 `priority` headers, and
//! the server handing each response's priority and size to the multipath stream before writing
//! it, so that PriorityBucket splits it over the paths and sends the urgent ones first.
//!
//! ```text
//! cargo run --example h3_two_paths
//! ```

// An example: its result is stdout.
#![allow(clippy::print_stdout)]

use bytes::{Buf, Bytes};
use mpquic::h3::H3Connection;
use mpquic::h3_prio::PriorityField;
use mpquic::{Endpoint, PathConfig, Priority, SelfSigned, StreamId};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the page asks for: path, `priority` header, response size.
const OBJECTS: [(&str, &str, usize); 3] = [
    ("/index.html", "u=0", 20_000),
    ("/style.css", "u=0", 10_000),
    ("/hero.jpg", "u=5, i", 600_000),
];

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let certificate = SelfSigned::new(&["localhost"])?;
    let server = Endpoint::server(certificate.server_config()?, "127.0.0.1:0".parse()?)?;
    let server_addr = server.local_addr()?;
    tokio::spawn(async move {
        while let Some(incoming) = server.accept().await {
            tokio::spawn(serve(incoming.await?));
        }
        Ok::<_, BoxError>(())
    });

    let mut client = Endpoint::client("127.0.0.1:0".parse()?)?;
    client.set_default_client_config(certificate.client_config()?);
    let conn = client.connect(server_addr, "localhost")?.await?;
    conn.open_path(&PathConfig::new("127.0.0.2:0".parse()?, server_addr))
        .await?;

    let (mut driver, send_request) = h3::client::new(H3Connection::new(conn.clone())).await?;
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let start = std::time::Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for (path, priority, _) in OBJECTS {
        let mut send_request = send_request.clone();
        requests.spawn(async move {
            let request = http::Request::get(format!("https://localhost{path}"))
                .header("priority", priority)
                .body(())?;
            let mut stream = send_request.send_request(request).await?;
            stream.finish().await?;
            stream.recv_response().await?;
            let mut bytes = 0;
            while let Some(chunk) = stream.recv_data().await? {
                bytes += chunk.remaining();
            }
            Ok::<_, BoxError>((path, bytes, start.elapsed()))
        });
    }
    while let Some(done) = requests.join_next().await {
        let (path, bytes, took) = done??;
        println!(
            "{path:<12} {bytes:>7} bytes after {:>6.1} ms",
            took.as_secs_f64() * 1e3
        );
    }
    for path in conn.paths() {
        println!(
            "path {} ({}): {} bytes received",
            path.id.0, path.local, path.bytes_received
        );
    }
    conn.close(0u32.into(), b"done");
    client.wait_idle().await;
    Ok(())
}

/// Answers every request of one session with the object's size in bytes, after telling the
/// multipath stream the request's priority and the response's size.
async fn serve(conn: mpquic::Connection) -> Result<(), BoxError> {
    let mut h3 = h3::server::builder()
        .build::<_, Bytes>(H3Connection::new(conn.clone()))
        .await?;
    while let Some(resolver) = h3.accept().await? {
        let (request, mut stream) = resolver.resolve_request().await?;
        let priority = request
            .headers()
            .get("priority")
            .map_or(Priority::DEFAULT, |v| Priority::from_field(v.as_bytes()));
        let size = OBJECTS
            .iter()
            .find(|o| o.0 == request.uri().path())
            .map_or(0, |o| o.2);
        let id = StreamId(stream.id().into_inner());
        conn.set_stream_priority(id, priority)?;
        conn.set_stream_size_hint(id, size as u64)?;
        stream
            .send_response(http::Response::builder().status(200).body(())?)
            .await?;
        stream.send_data(Bytes::from(vec![b'x'; size])).await?;
        stream.finish().await?;
    }
    Ok(())
}
