#!/usr/bin/env python3
"""Verifies an mc-platform session assertion offline, with PyJWT (pip install "PyJWT[crypto]").

    MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... python3 verify_assertion.py <assertion>

The assertion is an EdDSA (Ed25519) JWT: Python's standard library cannot check that signature,
PyJWT with the `cryptography` package can. The key set is fetched once and kept; an unknown
`kid` (a rotated key) fetches it again.
"""

import os
import sys

import jwt  # PyJWT
from jwt.algorithms import has_crypto

if not has_crypto:  # PyJWT without `cryptography` has no EdDSA
    raise ImportError('PyJWT needs the cryptography package for EdDSA: pip install "PyJWT[crypto]"')

BASE_URL = os.environ.get("MCP_BASE_URL", "http://localhost:3000").rstrip("/")
# The service's PUBLIC_URL: the same as BASE_URL unless your backend reaches it at another address.
ISSUER = os.environ.get("MCP_ISSUER", BASE_URL)
CLIENT_ID = os.environ["MCP_CLIENT_ID"]

_jwks = jwt.PyJWKClient(f"{BASE_URL}/.well-known/jwks.json", lifespan=300)


def verify_assertion(assertion):
    """The assertion's claims (sub = the player's UUID, name = their name), or a jwt.PyJWTError."""
    if jwt.get_unverified_header(assertion).get("typ") != "JWT":
        raise jwt.InvalidTokenError("not a session assertion (typ)")
    key = _jwks.get_signing_key_from_jwt(assertion)  # by the header's kid
    return jwt.decode(
        assertion,
        key.key,
        algorithms=["EdDSA"],  # only EdDSA: never "none" or a shared-secret algorithm
        issuer=ISSUER,
        audience=CLIENT_ID,  # an assertion made for another client is refused
        options={"require": ["iss", "aud", "sub", "exp", "iat"]},
        leeway=60,  # clock skew, seconds
    )


if __name__ == "__main__":
    try:
        claims = verify_assertion(sys.argv[1])
    except jwt.PyJWTError as e:
        print("Assertion rejected:", e, file=sys.stderr)
        sys.exit(1)
    print(f"Assertion verified: sub={claims['sub']} name={claims['name']} exp={claims['exp']}")
