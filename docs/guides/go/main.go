// A launcher backend signing a player in through mc-platform, with Go's standard library only:
// net/http for the calls, crypto/ed25519 for the assertion's signature.
//
//	MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... MCP_CLIENT_SECRET=... go run main.go
//	MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... go run main.go verify <assertion>
//
// The first starts a login, opens the player's browser, polls until the player has approved,
// validates the session token and verifies the signed assertion offline; with `device` (go run
// main.go device) it shows a code to type on another device instead of opening a browser. The
// second verifies an assertion only.
package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	baseURL = strings.TrimRight(env("MCP_BASE_URL", "http://localhost:3000"), "/")
	// The service's PUBLIC_URL: the same as MCP_BASE_URL unless the backend reaches it at another address.
	issuer       = env("MCP_ISSUER", baseURL)
	clientID     = env("MCP_CLIENT_ID", "")
	clientSecret = env("MCP_CLIENT_SECRET", "") // on the backend only, never in the launcher
	httpClient   = &http.Client{Timeout: 30 * time.Second}
)

// APIError is an answer other than 2xx, with the code and message of the service's error envelope.
type APIError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// SignInFailed: the login ended without a session, denied (with a code such as consent_denied) or expired.
type SignInFailed struct{ Code string }

func (e *SignInFailed) Error() string { return e.Code }

// call POSTs JSON with the client's credentials in the body and decodes the JSON answer into out.
func call(path string, fields map[string]any, out any) error {
	body := map[string]any{"client_id": clientID, "client_secret": clientSecret}
	for k, v := range fields {
		body[k] = v
	}
	data, _ := json.Marshal(body)
	res, err := httpClient.Post(baseURL+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		var envelope struct { // {"error": {"code", "message", "request_id"}}
			Error struct{ Code, Message string } `json:"error"`
		}
		json.NewDecoder(res.Body).Decode(&envelope)
		retry, _ := strconv.Atoi(res.Header.Get("retry-after"))
		return &APIError{res.StatusCode, envelope.Error.Code, envelope.Error.Message, time.Duration(retry) * time.Second}
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// signIn runs one login to its end and returns the session token (svc_session_token).
func signIn(clientState string, device bool) (string, error) {
	var started struct {
		AuthRequestID   string `json:"auth_request_id"`
		AuthURL         string `json:"auth_url"`
		Interval        int    `json:"interval"`
		UserCode        string `json:"user_code"`        // device flow
		VerificationURI string `json:"verification_uri"` // device flow
	}
	body := map[string]any{"client_state": clientState}
	if device {
		body["flow"] = "device"
	}
	if err := call("/client/ms-auth/start", body, &started); err != nil {
		return "", err
	}
	if device {
		// No browser here (a console, a TV): the player types the code on their phone or computer.
		fmt.Printf("On another device, open %s and enter %s\n", started.VerificationURI, started.UserCode)
	} else {
		// Here your backend hands auth_url to the launcher, which opens it in the player's browser.
		fmt.Println("Open this address in the player's browser:", started.AuthURL)
		openBrowser(started.AuthURL)
	}

	interval := time.Duration(started.Interval) * time.Second
	last := ""
	for {
		time.Sleep(interval)
		var polled struct {
			Status          string `json:"status"` // pending -> authenticated -> authorized | denied | expired
			SvcSessionToken string `json:"svc_session_token"`
			Error           string `json:"error"`
		}
		err := call("/client/ms-auth/poll", map[string]any{"auth_request_id": started.AuthRequestID}, &polled)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status == 429 {
			time.Sleep(max(apiErr.RetryAfter, interval)) // over the poll budget: wait as told
			continue
		} else if err != nil {
			return "", err
		}
		if polled.Status != last {
			fmt.Println("Status:", polled.Status)
			last = polled.Status
		}
		switch polled.Status {
		case "authorized":
			return polled.SvcSessionToken, nil
		case "denied", "expired":
			return "", &SignInFailed{polled.Error}
		}
	}
}

// Session is validate's answer: Valid false and nothing else for an unknown, expired or revoked token.
type Session struct {
	Valid      bool   `json:"valid"`
	McUUID     string `json:"mc_uuid"`
	McUsername string `json:"mc_username"`
	ExpiresAt  string `json:"expires_at"`
	Assertion  string `json:"assertion"` // only when asked for
}

func validate(sessionToken string, assertion bool) (Session, error) {
	var s Session
	err := call("/client/ms-auth/session/validate", map[string]any{"svc_session_token": sessionToken, "assertion": assertion}, &s)
	return s, err
}

// openBrowser uses $BROWSER when set (as xdg-open and Python do), else the system's opener.
func openBrowser(url string) {
	var cmd *exec.Cmd
	switch {
	case os.Getenv("BROWSER") != "":
		cmd = exec.Command(os.Getenv("BROWSER"), url)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "Could not open a browser:", err)
	}
}

// ---- Offline assertion checks ----

// Claims are an assertion's claims: Sub is the player's UUID, Name their name.
type Claims struct {
	Iss  string `json:"iss"`
	Aud  any    `json:"aud"` // a string (or a list of them)
	Sub  string `json:"sub"`
	Name string `json:"name"`
	Iat  int64  `json:"iat"`
	Exp  int64  `json:"exp"`
}

// verifyAssertion returns the claims of a genuine, current assertion made for this client.
func verifyAssertion(assertion string) (*Claims, error) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return nil, errors.New("not a compact JWS")
	}
	var header struct{ Alg, Kid, Typ string }
	if err := decodePart(parts[0], &header); err != nil {
		return nil, err
	}
	// Only EdDSA: never "none" or a shared-secret algorithm named by the token itself.
	if header.Alg != "EdDSA" || header.Typ != "JWT" {
		return nil, fmt.Errorf("unexpected header %+v", header)
	}
	key, err := publicKey(header.Kid)
	if err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), sig) {
		return nil, errors.New("bad signature")
	}
	var c Claims
	if err := decodePart(parts[1], &c); err != nil {
		return nil, err
	}
	now, skew := time.Now().Unix(), int64(60)
	if c.Iss != issuer {
		return nil, fmt.Errorf("issuer %q", c.Iss)
	}
	if !audienceHas(c.Aud, clientID) {
		return nil, fmt.Errorf("made for another client: %v", c.Aud)
	}
	if c.Exp+skew < now {
		return nil, errors.New("expired")
	}
	if c.Sub == "" {
		return nil, errors.New("no subject")
	}
	return &c, nil
}

func audienceHas(aud any, id string) bool {
	switch a := aud.(type) {
	case string:
		return a == id
	case []any:
		for _, v := range a {
			if v == id {
				return true
			}
		}
	}
	return false
}

func decodePart(part string, out any) error {
	data, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return errors.New("not base64url")
	}
	return json.Unmarshal(data, out)
}

var jwks struct {
	sync.Mutex
	keys      map[string]ed25519.PublicKey
	fetchedAt time.Time
}

// publicKey is the key named kid from /.well-known/jwks.json: kept 5 minutes, fetched again for an
// unknown kid (a new key), but not more than once in 30 seconds (tokens with made-up kids).
func publicKey(kid string) (ed25519.PublicKey, error) {
	jwks.Lock()
	defer jwks.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		age := time.Since(jwks.fetchedAt)
		if jwks.keys == nil || age > 5*time.Minute || (attempt == 1 && age > 30*time.Second) {
			res, err := httpClient.Get(baseURL + "/.well-known/jwks.json")
			if err != nil {
				return nil, err
			}
			var set struct {
				Keys []struct{ Kty, Crv, Kid, X string } `json:"keys"`
			}
			err = json.NewDecoder(res.Body).Decode(&set)
			res.Body.Close()
			if err != nil || res.StatusCode != 200 {
				return nil, fmt.Errorf("JWKS: HTTP %d", res.StatusCode)
			}
			jwks.keys = map[string]ed25519.PublicKey{}
			for _, k := range set.Keys {
				x, err := base64.RawURLEncoding.DecodeString(k.X)
				if k.Kty == "OKP" && k.Crv == "Ed25519" && err == nil && len(x) == ed25519.PublicKeySize {
					jwks.keys[k.Kid] = x
				}
			}
			jwks.fetchedAt = time.Now()
		}
		if key, ok := jwks.keys[kid]; ok {
			return key, nil
		}
	}
	return nil, fmt.Errorf("no published key %q", kid)
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func max(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func main() {
	if clientID == "" {
		fmt.Fprintln(os.Stderr, "MCP_CLIENT_ID is not set")
		os.Exit(2)
	}
	if len(os.Args) == 3 && os.Args[1] == "verify" {
		c, err := verifyAssertion(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "Assertion rejected:", err)
			os.Exit(1)
		}
		fmt.Printf("Assertion verified: sub=%s name=%s exp=%d\n", c.Sub, c.Name, c.Exp)
		return
	}

	token, err := signIn("xyz", len(os.Args) == 2 && os.Args[1] == "device")
	var failed *SignInFailed
	if errors.As(err, &failed) {
		fmt.Fprintln(os.Stderr, "Sign-in refused:", failed.Code)
		os.Exit(1)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Store the token with the player's launcher session; validate it whenever you need the player.
	s, err := validate(token, true)
	if err != nil || !s.Valid {
		fmt.Fprintln(os.Stderr, "The session is not valid", err)
		os.Exit(1)
	}
	fmt.Printf("Signed in: %s (%s), session valid until %s\n", s.McUsername, s.McUUID, s.ExpiresAt)

	c, err := verifyAssertion(s.Assertion)
	if err == nil && c.Sub != s.McUUID {
		err = errors.New("the assertion names another player")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Assertion rejected:", err)
		os.Exit(1)
	}
	fmt.Printf("Assertion verified: sub=%s name=%s exp=%d\n", c.Sub, c.Name, c.Exp)
}
