//! A launcher backend signing a player in through mc-platform, in Rust: ureq and serde_json for
//! the calls, ed25519-dalek for the assertion's signature.
//!
//!     MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... MCP_CLIENT_SECRET=... cargo run
//!     MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... cargo run -- verify <assertion>
//!
//! The first starts a login, opens the player's browser, polls until the player has approved,
//! validates the session token and verifies the signed assertion offline; with `device` (cargo run
//! -- device) it shows a code to type on another device instead of opening a browser. The second
//! verifies an assertion only.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::{exit, Command};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Config {
    base_url: String,
    /// The service's PUBLIC_URL: the same as MCP_BASE_URL unless the backend reaches it at another address.
    issuer: String,
    client_id: String,
    /// On the backend only, never in the launcher.
    client_secret: String,
}

#[derive(Debug)]
enum Error {
    /// An answer other than 2xx, with the code and message of the service's error envelope.
    Api {
        status: u16,
        code: String,
        message: String,
        retry_after: Option<u64>,
    },
    /// The service could not be reached.
    Transport(String),
    /// The login ended without a session: denied (with a code such as consent_denied) or expired.
    SignInFailed(String),
    /// The assertion is not a genuine, current one made for this client.
    AssertionRejected(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Error::Api {
                status,
                code,
                message,
                ..
            } => write!(f, "{status} {code}: {message}"),
            Error::Transport(why) | Error::SignInFailed(why) | Error::AssertionRejected(why) => {
                f.write_str(why)
            }
        }
    }
}

impl Config {
    fn from_env() -> Config {
        let var = |name: &str, fallback: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or(fallback.into())
        };
        let base_url = var("MCP_BASE_URL", "http://localhost:3000")
            .trim_end_matches('/')
            .to_string();
        Config {
            issuer: var("MCP_ISSUER", &base_url),
            client_id: var("MCP_CLIENT_ID", ""),
            client_secret: var("MCP_CLIENT_SECRET", ""),
            base_url,
        }
    }

    /// POSTs JSON with the client's credentials in the body and returns the JSON answer.
    fn call(&self, path: &str, mut body: Value) -> Result<Value, Error> {
        body["client_id"] = json!(self.client_id);
        body["client_secret"] = json!(self.client_secret);
        match ureq::post(&format!("{}{}", self.base_url, path))
            .timeout(Duration::from_secs(30))
            .send_json(body)
        {
            Ok(response) => response
                .into_json()
                .map_err(|e| Error::Transport(e.to_string())),
            Err(ureq::Error::Status(status, response)) => {
                let retry_after = response.header("retry-after").and_then(|s| s.parse().ok());
                // {"error": {"code", "message", "request_id"}}
                let envelope: Value = response.into_json().unwrap_or(Value::Null);
                let field = |name: &str| {
                    envelope["error"][name]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                };
                Err(Error::Api {
                    status,
                    code: field("code"),
                    message: field("message"),
                    retry_after,
                })
            }
            Err(e) => Err(Error::Transport(e.to_string())),
        }
    }

    /// Runs one login to its end and returns the session token (svc_session_token).
    fn sign_in(&self, client_state: &str, device: bool) -> Result<String, Error> {
        let mut body = json!({ "client_state": client_state });
        if device {
            body["flow"] = json!("device");
        }
        let started = self.call("/client/ms-auth/start", body)?;
        let text = |name: &str| started[name].as_str().unwrap_or_default().to_string();
        if device {
            // No browser here (a console, a TV): the player types the code on their phone or computer.
            let (uri, code) = (text("verification_uri"), text("user_code"));
            println!("On another device, open {uri} and enter {code}");
        } else {
            // Here your backend hands auth_url to the launcher, which opens it in the player's browser.
            println!(
                "Open this address in the player's browser: {}",
                text("auth_url")
            );
            open_browser(&text("auth_url"));
        }

        let interval = started["interval"].as_u64().unwrap_or(2);
        let mut last = String::new();
        loop {
            sleep(Duration::from_secs(interval));
            let polled = match self.call(
                "/client/ms-auth/poll",
                json!({ "auth_request_id": started["auth_request_id"] }),
            ) {
                Err(Error::Api {
                    status: 429,
                    retry_after,
                    ..
                }) => {
                    // Over the poll budget: wait as told, then go on.
                    sleep(Duration::from_secs(
                        retry_after.unwrap_or(interval).max(interval),
                    ));
                    continue;
                }
                other => other?,
            };
            // pending -> authenticated -> authorized | denied | expired
            let status = polled["status"].as_str().unwrap_or_default().to_string();
            if status != last {
                println!("Status: {status}");
                last = status.clone();
            }
            match status.as_str() {
                "authorized" => {
                    return Ok(polled["svc_session_token"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string())
                }
                "denied" | "expired" => {
                    return Err(Error::SignInFailed(
                        polled["error"].as_str().unwrap_or_default().to_string(),
                    ))
                }
                _ => {}
            }
        }
    }

    /// {valid, mc_uuid, mc_username, expires_at} (and a signed assertion when asked); {valid: false} otherwise.
    fn validate(&self, session_token: &str, assertion: bool) -> Result<Value, Error> {
        self.call(
            "/client/ms-auth/session/validate",
            json!({ "svc_session_token": session_token, "assertion": assertion }),
        )
    }
}

/// $BROWSER when set (as xdg-open and Python do), else the system's opener.
fn open_browser(url: &str) {
    let mut command = match std::env::var("BROWSER") {
        Ok(browser) if !browser.is_empty() => Command::new(browser),
        _ if cfg!(target_os = "windows") => {
            let mut c = Command::new("rundll32");
            c.arg("url.dll,FileProtocolHandler");
            c
        }
        _ if cfg!(target_os = "macos") => Command::new("open"),
        _ => Command::new("xdg-open"),
    };
    if let Err(e) = command.arg(url).spawn() {
        eprintln!("Could not open a browser: {e}");
    }
}

// ---- Offline assertion checks ----

/// The keys of /.well-known/jwks.json by kid: kept 5 minutes, fetched again for an unknown kid (a
/// new key), but not more than once in 30 seconds (tokens with made-up kids).
struct Jwks {
    url: String,
    keys: HashMap<String, VerifyingKey>,
    fetched_at: Option<Instant>,
}

impl Jwks {
    fn new(base_url: &str) -> Jwks {
        Jwks {
            url: format!("{base_url}/.well-known/jwks.json"),
            keys: HashMap::new(),
            fetched_at: None,
        }
    }

    fn key(&mut self, kid: &str) -> Result<VerifyingKey, Error> {
        for attempt in 0..2 {
            let age = self.fetched_at.map(|at| at.elapsed());
            let fetch = age.is_none_or(|age| {
                age > Duration::from_secs(300) || (attempt == 1 && age > Duration::from_secs(30))
            });
            if fetch {
                let set: Value = ureq::get(&self.url)
                    .call()
                    .and_then(|r| r.into_json().map_err(Into::into))
                    .map_err(|e| Error::Transport(format!("JWKS: {e}")))?;
                self.keys.clear();
                for k in set["keys"].as_array().into_iter().flatten() {
                    if k["kty"] != "OKP" || k["crv"] != "Ed25519" {
                        continue;
                    }
                    let x = URL_SAFE_NO_PAD
                        .decode(k["x"].as_str().unwrap_or_default())
                        .unwrap_or_default();
                    if let Some(key) = x
                        .try_into()
                        .ok()
                        .and_then(|x: [u8; 32]| VerifyingKey::from_bytes(&x).ok())
                    {
                        self.keys
                            .insert(k["kid"].as_str().unwrap_or_default().to_string(), key);
                    }
                }
                self.fetched_at = Some(Instant::now());
            }
            if let Some(key) = self.keys.get(kid) {
                return Ok(*key);
            }
        }
        Err(Error::AssertionRejected(format!("no published key {kid}")))
    }
}

/// The claims of a genuine, current assertion made for this client (sub = the player's UUID, name = their name).
fn verify_assertion(config: &Config, jwks: &mut Jwks, assertion: &str) -> Result<Value, Error> {
    let reject = |why: &str| Error::AssertionRejected(why.to_string());
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header_b64, claims_b64, signature_b64] = parts[..] else {
        return Err(reject("not a compact JWS"));
    };
    let json_part = |part: &str| -> Result<Value, Error> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| reject("not base64url"))?;
        serde_json::from_slice(&bytes).map_err(|_| reject("not JSON"))
    };
    let header = json_part(header_b64)?;
    // Only EdDSA: never "none" or a shared-secret algorithm named by the token itself.
    if header["alg"] != "EdDSA" || header["typ"] != "JWT" {
        return Err(reject(&format!("unexpected header {header}")));
    }
    let key = jwks.key(header["kid"].as_str().unwrap_or_default())?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature_b64)
        .map_err(|_| reject("not base64url"))?;
    let signature = Signature::from_slice(&signature).map_err(|_| reject("bad signature"))?;
    key.verify_strict(format!("{header_b64}.{claims_b64}").as_bytes(), &signature)
        .map_err(|_| reject("bad signature"))?;

    let claims = json_part(claims_b64)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let skew = 60;
    if claims["iss"] != config.issuer.as_str() {
        return Err(reject(&format!("issuer {}", claims["iss"])));
    }
    let aud = &claims["aud"];
    let for_us = aud == config.client_id.as_str()
        || aud
            .as_array()
            .is_some_and(|list| list.iter().any(|a| a == config.client_id.as_str()));
    if !for_us {
        return Err(reject(&format!("made for another client: {aud}")));
    }
    if claims["exp"].as_u64().is_none_or(|exp| exp + skew < now) {
        return Err(reject("expired"));
    }
    if !claims["sub"].is_string() {
        return Err(reject("no subject"));
    }
    Ok(claims)
}

fn main() {
    let config = Config::from_env();
    let mut jwks = Jwks::new(&config.base_url);
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "verify" {
        match verify_assertion(&config, &mut jwks, &args[2]) {
            Ok(c) => println!(
                "Assertion verified: sub={} name={} exp={}",
                c["sub"].as_str().unwrap(),
                c["name"].as_str().unwrap_or_default(),
                c["exp"]
            ),
            Err(e) => {
                eprintln!("Assertion rejected: {e}");
                exit(1);
            }
        }
        return;
    }

    let token = match config.sign_in("xyz", args.len() == 2 && args[1] == "device") {
        Ok(token) => token,
        Err(Error::SignInFailed(code)) => {
            eprintln!("Sign-in refused: {code}");
            exit(1);
        }
        Err(e) => {
            eprintln!("{e}");
            exit(1);
        }
    };
    // Store the token with the player's launcher session; validate it whenever you need the player.
    let session = config.validate(&token, true).unwrap_or_else(|e| {
        eprintln!("{e}");
        exit(1)
    });
    if session["valid"] != true {
        eprintln!("The session is not valid");
        exit(1);
    }
    let (name, uuid) = (
        session["mc_username"].as_str().unwrap_or_default(),
        session["mc_uuid"].as_str().unwrap_or_default(),
    );
    println!(
        "Signed in: {name} ({uuid}), session valid until {}",
        session["expires_at"].as_str().unwrap_or_default()
    );

    match verify_assertion(
        &config,
        &mut jwks,
        session["assertion"].as_str().unwrap_or_default(),
    ) {
        Ok(c) if c["sub"] == uuid => {
            println!(
                "Assertion verified: sub={} name={} exp={}",
                c["sub"].as_str().unwrap(),
                c["name"].as_str().unwrap_or_default(),
                c["exp"]
            )
        }
        Ok(_) => {
            eprintln!("Assertion rejected: the assertion names another player");
            exit(1);
        }
        Err(e) => {
            eprintln!("Assertion rejected: {e}");
            exit(1);
        }
    }
}
