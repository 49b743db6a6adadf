#!/usr/bin/env python3
"""OpenAPI conformance of `meshcheck serve` (run by .ci/run).

1. Starts the real server binary on 127.0.0.1 (port 0) with a fresh data
   folder and a `scale` account, url fetching switched off (schemathesis
   invents URLs; CI may reach only loopback and the package registries).
2. Validates GET /v1/openapi.json as OpenAPI 3.1 (openapi-spec-validator).
3. Runs schemathesis against the running server: every check except
   positive_data_acceptance (a schema cannot say which bytes are a valid glTF
   model, so schema-valid uploads are rightly refused with 415/422), bounded
   in examples and rate (the key's bucket is 120 requests per minute).
4. Stops the server with SIGTERM and requires a clean exit.

Usage: openapi_check.py --meshcheck target/debug/meshcheck [--max-examples N]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshcheck", required=True)
    ap.add_argument("--max-examples", type=int, default=10)
    ap.add_argument("--st", default=os.path.join(os.path.dirname(sys.executable), "st"))
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="meshcheck-st-")
    created = subprocess.run(
        [args.meshcheck, "accounts", "create", "--plan", "scale", "--json", "--data-dir", data],
        check=True, capture_output=True, text=True,
    )
    key = json.loads(created.stdout)["api_key"]
    server = subprocess.Popen(
        [args.meshcheck, "serve", "--addr", "127.0.0.1:0", "--data-dir", data,
         "--fetch-allow-hosts", "", "--log-format", "json"],
        stderr=subprocess.PIPE, text=True,
    )
    addr = None
    for line in server.stderr:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("fields", {}).get("message") == "meshcheck serve listening":
            addr = event["fields"]["addr"]
            break
    if addr is None:
        print("the server did not start", file=sys.stderr)
        return 1
    # Keep draining the log so the server never blocks on a full pipe.
    lines = []
    import threading
    threading.Thread(target=lambda: lines.extend(server.stderr), daemon=True).start()
    base = f"http://{addr}"
    failed = False
    try:
        from openapi_spec_validator import validate
        doc = json.load(urllib.request.urlopen(f"{base}/v1/openapi.json"))
        validate(doc)
        print(f"openapi.json: valid OpenAPI {doc['openapi']}, info.version {doc['info']['version']}, "
              f"{sum(len(v) for v in doc['paths'].values())} operations")
        st = subprocess.run(
            [args.st, "run", f"{base}/v1/openapi.json", "-H", f"X-Api-Key: {key}",
             "--checks", "all", "--exclude-checks", "positive_data_acceptance",
             "--max-examples", str(args.max_examples), "--rate-limit", "110/m",
             "--workers", "1", "--request-timeout", "30", "--generation-deterministic"],
        )
        failed = st.returncode != 0
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
        if code != 0:
            print(f"the server exited with {code}", file=sys.stderr)
            failed = True
    five = [l for l in lines if '"status":5' in l.replace(" ", "")]
    if five:
        print("server logged 5xx responses:\n" + "".join(five[:10]), file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
