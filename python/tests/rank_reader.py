"""One rank of a data-parallel reader, as a trainer runs it: reads its share of the table with RolloutTail and
writes every row it is handed to a file, one JSON line each. Used by the suite (PythonTrainerIT).

  rank_reader.py LOCATION RANK WORLD OUT [--state PATH] [--token T] [--stop-after N --checkpoint FILE]
                 [--restore FILE] [--shuffle N] [--tls-root-certs PEM]

--state keeps the tail's ticket in a file across runs; --stop-after N stops after N rows, writing the tail's
state_dict() to --checkpoint (a trainer's checkpoint); --restore starts from such a checkpoint.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from rollout_ingest import RolloutTail  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("location")
    parser.add_argument("rank", type=int)
    parser.add_argument("world", type=int)
    parser.add_argument("out")
    parser.add_argument("--state")
    parser.add_argument("--token")
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--checkpoint")
    parser.add_argument("--restore")
    parser.add_argument("--shuffle", type=int, default=0)
    parser.add_argument("--tls-root-certs", help="a PEM file of the certificate to trust (grpc+tls)")
    args = parser.parse_args()

    root_certs = None
    if args.tls_root_certs:
        with open(args.tls_root_certs, "rb") as f:
            root_certs = f.read()
    tail = RolloutTail(args.location, token=args.token, rank=args.rank, world_size=args.world,
                       columns=["record_id", "reward"], state_path=args.state, follow=False,
                       shuffle_buffer=args.shuffle, max_offsets=50, tls_root_certs=root_certs)
    if args.restore:
        with open(args.restore) as f:
            tail.load_state_dict(json.load(f))
    handed = 0
    with open(args.out, "a") as out:
        for row in tail:
            out.write(json.dumps({"record_id": row["record_id"], "partition": row["source_partition"],
                                  "rank": args.rank}) + "\n")
            handed += 1
            if args.stop_after and handed >= args.stop_after:
                with open(args.checkpoint, "w") as f:
                    json.dump(tail.state_dict(), f)
                break
    print(f"rank {args.rank}: {handed} rows")


if __name__ == "__main__":
    main()
