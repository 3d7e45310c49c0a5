#!/usr/bin/env bash
# Every benchmark suite once with small sizes, printed to /tmp/pairs/<label>/<suite>.txt: run it on a checkout before
# a change and on one after, and compare. Usage: before-after.sh <checkout dir> <label>
set -u
repo=$1; label=$2; out=/tmp/pairs/$label; mkdir -p $out /tmp/pairs
cd $repo
run() { name=$1; shift; echo "== $name: ./rollout-ingest bench $*" > $out/$name.txt; timeout 900 ./rollout-ingest bench "$@" --dir /tmp/pairs/scratch-$label >> $out/$name.txt 2>&1; echo "exit $?" >> $out/$name.txt; rm -rf /tmp/pairs/scratch-$label; }
run table table --repeat 5
run reads reads --read-base-rows 10000,100000 --lookups 200
run merge merge --shards 4 --generations 8 --rows 1000 --threads 1,2
run merge-join merge-join --base-rows 100000,200000 --source-rows 20000 --commits 2
run merge-round merge-round --round-base-rows 100000,200000 --commits 2
run capacity capacity --seconds 20 --payload-bytes 512
run ingest ingest --records 60000 --fresh-rate 2000 --fresh-seconds 10
run sustained sustained --seconds 40 --payload-bytes 512
