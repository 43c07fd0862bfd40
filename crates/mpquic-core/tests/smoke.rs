mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_megabyte_over_two_paths() {
    let pair = pair(2, "priority-bucket").await;
    serve_hashes(pair.server.clone());
    let send = send_and_check(&pair.client, 1, 1 << 20).await;
    eprintln!("{:?} {:?}", send.path_bytes(), pair.client.paths());
}
