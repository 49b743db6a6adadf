#!/usr/bin/env python3
"""OpenAPI conformance of `meshcheck serve` (run by .ci/run).

1. Starts the real server binary on 127.0.0.1 (port 0) with a fresh data
   folder and a `scale` account, url fetching switched off (schemathesis
   invents URLs; CI may reach only loopback and the package registries),
   request limits off (`--no-rate-limits`: the limits have their own Rust
   tests, and 120 per minute would make this run six minutes long), and the
   two third-party services it cannot reach replaced by one fake on
   127.0.0.1 speaking their wire formats: Stripe (Checkout and Portal
   sessions, form-encoded in, JSON out) and an OpenAI-compatible vision model
   (chat completions answering each VIS check's schema). So billing and
   inspect answer as configured servers do, and any 5xx is a real fault.
2. Validates GET /v1/openapi.json as OpenAPI 3.1 (openapi-spec-validator).
3. Runs schemathesis against the running server: every check except
   positive_data_acceptance (a schema cannot say which bytes are a valid glTF
   model, so schema-valid uploads are rightly refused with 415/422), bounded
   in examples and rate (the key's bucket is 120 requests per minute).
4. Stops the server with SIGTERM and requires a clean exit.

Usage: openapi_check.py --meshcheck target/debug/meshcheck [--max-examples N]
"""

import argparse
import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.request


VIS_ANSWERS = {
    "vis_001": {"matches": True, "confidence": "high", "observations": ["a model"], "mismatches": []},
    "vis_002": {"clean": True, "artifacts": []},
    "vis_003": {"answer": "Yes.", "confidence": "low", "evidence": []},
}


class Fake(http.server.BaseHTTPRequestHandler):
    """Stripe's and a vision model's endpoints, as far as meshcheck calls them."""

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(404, {"error": {"type": "invalid_request_error", "message": "No such resource"}})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path == "/v1/checkout/sessions":
            self.answer(200, {"id": "cs_test_1", "object": "checkout.session",
                              "url": "https://checkout.stripe.com/c/pay/cs_test_1"})
        elif self.path == "/v1/billing_portal/sessions":
            self.answer(200, {"id": "bps_1", "object": "billing_portal.session",
                              "url": "https://billing.stripe.com/p/session/test_1"})
        elif self.path == "/v1/chat/completions":
            request = json.loads(body or b"{}")
            name = request.get("response_format", {}).get("json_schema", {}).get("name", "vis_002")
            content = json.dumps(VIS_ANSWERS.get(name, VIS_ANSWERS["vis_002"]))
            self.answer(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": "fake-vision",
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": content}}]})
        else:
            self.answer(404, {"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}})


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
    import threading
    fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    fake_base = f"http://127.0.0.1:{fake.server_address[1]}"
    env = dict(os.environ,
               STRIPE_SECRET_KEY="sk_test_openapi_check", STRIPE_WEBHOOK_SECRET="whsec_openapi_check",
               STRIPE_PRICE_INDIE="price_indie", STRIPE_PRICE_STUDIO="price_studio",
               STRIPE_PRICE_SCALE="price_scale", STRIPE_API_BASE=fake_base,
               MESHCHECK_VISION_URL=f"{fake_base}/v1", MESHCHECK_VISION_MODEL="fake-vision")
    server = subprocess.Popen(
        [args.meshcheck, "serve", "--addr", "127.0.0.1:0", "--data-dir", data,
         "--fetch-allow-hosts", "", "--no-rate-limits", "--log-format", "json"],
        stderr=subprocess.PIPE, text=True, env=env,
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
             "--max-examples", str(args.max_examples), "--rate-limit", "1200/m",
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
