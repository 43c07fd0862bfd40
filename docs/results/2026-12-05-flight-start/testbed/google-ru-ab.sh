# usage: ab.sh TAG REV  -- builds the tree with crates/estimate/src/bandwidth.rs from REV and loads google.ru pb-high
cd /work/main
git show $2:crates/estimate/src/bandwidth.rs > crates/estimate/src/bandwidth.rs
./target/release/lab experiment --scenarios pb-high --pages google.ru-search-2018 --schedulers priority-bucket,lrf --reps 12 --no-extras --out /tmp/s16/ab-$1 > /tmp/s16/ab-$1.log 2>&1
git checkout crates/estimate/src/bandwidth.rs
