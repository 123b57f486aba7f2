#!/usr/bin/env python3
"""A launcher backend signing a player in through mc-platform, with Python's standard library only.

    MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... MCP_CLIENT_SECRET=... python3 launcher_backend.py

Starts a login, opens the player's browser, polls until the player has approved, and validates
the session token. With `device` (python3 launcher_backend.py device) it shows a code to type on
another device instead of opening a browser. The signed assertion that comes with it is verified offline by
verify_assertion.py, which needs PyJWT[crypto] (the standard library has no Ed25519): without
it this program says so and stops after the validation.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
import webbrowser

BASE_URL = os.environ.get("MCP_BASE_URL", "http://localhost:3000").rstrip("/")
CLIENT_ID = os.environ["MCP_CLIENT_ID"]
CLIENT_SECRET = os.environ["MCP_CLIENT_SECRET"]  # keep it on the backend, never in the launcher


class ApiError(Exception):
    """An answer other than 2xx, with the code and message of the service's error envelope."""

    def __init__(self, status, code, message, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.retry_after = status, code, retry_after


class SignInFailed(Exception):
    """The login ended without a session: `denied` (with a code such as consent_denied) or `expired`."""


def call(path, body):
    """POSTs JSON with the client's credentials in the body and returns the JSON answer."""
    data = json.dumps({"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, **body}).encode()
    request = urllib.request.Request(
        BASE_URL + path, data=data, method="POST", headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        try:
            error = json.load(e)["error"]  # {"error": {"code", "message", "request_id"}}
        except (ValueError, KeyError, TypeError):
            error = {"code": f"http_{e.code}", "message": e.reason}
        raise ApiError(e.code, error.get("code"), error.get("message"), e.headers.get("retry-after")) from None


def sign_in(client_state=None, device=False):
    """Runs one login to its end and returns the session token (`svc_session_token`)."""
    body = {"client_state": client_state} if client_state else {}
    if device:
        body["flow"] = "device"
    started = call("/client/ms-auth/start", body)
    if device:
        # No browser here (a console, a TV): the player types the code on their phone or computer.
        print(f"On another device, open {started['verification_uri']} and enter {started['user_code']}", flush=True)
    else:
        # Here your backend hands auth_url to the launcher, which opens it in the player's browser.
        print("Open this address in the player's browser:", started["auth_url"], flush=True)
        webbrowser.open(started["auth_url"])

    interval, last = started["interval"], None
    while True:
        time.sleep(interval)
        try:
            polled = call("/client/ms-auth/poll", {"auth_request_id": started["auth_request_id"]})
        except ApiError as e:
            if e.status == 429:  # over the poll budget: wait as told, then go on
                time.sleep(float(e.retry_after or interval))
                continue
            raise
        status = polled["status"]  # pending -> authenticated -> authorized | denied | expired
        if status != last:
            print("Status:", status, flush=True)
            last = status
        if status == "authorized":
            return polled["svc_session_token"]
        if status in ("denied", "expired"):
            raise SignInFailed(polled["error"])


def validate(session_token, assertion=False):
    """{valid, mc_uuid, mc_username, expires_at} (and a signed `assertion` when asked); {valid: false} otherwise."""
    return call("/client/ms-auth/session/validate", {"svc_session_token": session_token, "assertion": assertion})


def main():
    try:
        token = sign_in(client_state="xyz", device=sys.argv[1:] == ["device"])
    except SignInFailed as e:
        print("Sign-in refused:", e, file=sys.stderr)
        return 1
    # Store the token with the player's launcher session; validate it whenever you need the player.
    session = validate(token, assertion=True)
    if not session["valid"]:
        print("The session is not valid", file=sys.stderr)
        return 1
    print(f"Signed in: {session['mc_username']} ({session['mc_uuid']}), session valid until {session['expires_at']}")

    try:
        from verify_assertion import verify_assertion  # needs PyJWT[crypto]
    except ImportError:
        print('Assertion not verified: install PyJWT[crypto] (pip install "PyJWT[crypto]") to check it offline')
        return 0
    claims = verify_assertion(session["assertion"])
    if claims["sub"] != session["mc_uuid"]:
        print("The assertion names another player", file=sys.stderr)
        return 1
    print(f"Assertion verified: sub={claims['sub']} name={claims['name']} exp={claims['exp']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
