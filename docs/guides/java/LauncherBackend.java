import java.awt.Desktop;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A launcher backend signing a player in through mc-platform, with the JDK only (17 or later):
 * java.net.http for the calls, java.security for the assertion's Ed25519 signature.
 *
 * <pre>
 * MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... MCP_CLIENT_SECRET=... java LauncherBackend.java
 * MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... java LauncherBackend.java verify &lt;assertion&gt;
 * </pre>
 *
 * The first starts a login, opens the player's browser, polls until the player has approved,
 * validates the session token and verifies the signed assertion offline; with {@code device} it
 * shows a code to type on another device instead of opening a browser. The second verifies an
 * assertion only. In your backend, swap the small JSON reader at the end for Jackson or Gson.
 */
public class LauncherBackend {
  static final String BASE_URL = env("MCP_BASE_URL", "http://localhost:3000").replaceAll("/+$", "");
  /** The service's PUBLIC_URL: the same as MCP_BASE_URL unless the backend reaches it at another address. */
  static final String ISSUER = env("MCP_ISSUER", BASE_URL);
  static final String CLIENT_ID = env("MCP_CLIENT_ID", null);
  static final String CLIENT_SECRET = env("MCP_CLIENT_SECRET", ""); // on the backend only, never in the launcher
  static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("verify")) {
      try {
        var claims = verifyAssertion(args[1]);
        System.out.printf("Assertion verified: sub=%s name=%s exp=%s%n", claims.get("sub"), claims.get("name"), num(claims.get("exp")));
      } catch (GeneralSecurityException e) {
        System.err.println("Assertion rejected: " + e.getMessage());
        System.exit(1);
      }
      return;
    }

    String token;
    try {
      token = signIn("xyz", args.length == 1 && args[0].equals("device"));
    } catch (SignInFailed e) {
      System.err.println("Sign-in refused: " + e.getMessage());
      System.exit(1);
      return;
    }
    // Store the token with the player's launcher session; validate it whenever you need the player.
    var session = validate(token, true);
    if (!Boolean.TRUE.equals(session.get("valid"))) {
      System.err.println("The session is not valid");
      System.exit(1);
    }
    System.out.printf("Signed in: %s (%s), session valid until %s%n", session.get("mc_username"), session.get("mc_uuid"), session.get("expires_at"));

    var claims = verifyAssertion((String) session.get("assertion"));
    if (!claims.get("sub").equals(session.get("mc_uuid"))) throw new GeneralSecurityException("the assertion names another player");
    System.out.printf("Assertion verified: sub=%s name=%s exp=%s%n", claims.get("sub"), claims.get("name"), num(claims.get("exp")));
  }

  // ---- The login ----

  /** The login ended without a session: denied (with a code such as consent_denied) or expired. */
  static class SignInFailed extends Exception {
    SignInFailed(String code) { super(code); }
  }

  /** An answer other than 2xx, with the code and message of the service's error envelope. */
  static class ApiError extends RuntimeException {
    final int status;
    final long retryAfterSeconds;
    ApiError(int status, String code, String message, long retryAfterSeconds) {
      super(status + " " + code + ": " + message);
      this.status = status;
      this.retryAfterSeconds = retryAfterSeconds;
    }
  }

  /** Runs one login to its end and returns the session token (svc_session_token). */
  static String signIn(String clientState, boolean device) throws Exception {
    var fields = new LinkedHashMap<String, Object>(Map.of("client_state", clientState));
    if (device) fields.put("flow", "device");
    var started = call("/client/ms-auth/start", fields);
    if (device) {
      // No browser here (a console, a TV): the player types the code on their phone or computer.
      System.out.printf("On another device, open %s and enter %s%n", started.get("verification_uri"), started.get("user_code"));
    } else {
      // Here your backend hands auth_url to the launcher, which opens it in the player's browser.
      System.out.println("Open this address in the player's browser: " + started.get("auth_url"));
      openBrowser((String) started.get("auth_url"));
    }

    long interval = num(started.get("interval"));
    String last = null;
    while (true) {
      Thread.sleep(interval * 1000);
      Map<String, Object> polled;
      try {
        polled = call("/client/ms-auth/poll", Map.of("auth_request_id", started.get("auth_request_id")));
      } catch (ApiError e) {
        if (e.status != 429) throw e;
        Thread.sleep(Math.max(e.retryAfterSeconds, interval) * 1000); // over the poll budget: wait as told
        continue;
      }
      var status = (String) polled.get("status"); // pending -> authenticated -> authorized | denied | expired
      if (!status.equals(last)) System.out.println("Status: " + (last = status));
      if (status.equals("authorized")) return (String) polled.get("svc_session_token");
      if (status.equals("denied") || status.equals("expired")) throw new SignInFailed((String) polled.get("error"));
    }
  }

  /** {valid, mc_uuid, mc_username, expires_at} (and a signed assertion when asked); {valid: false} otherwise. */
  static Map<String, Object> validate(String sessionToken, boolean assertion) throws Exception {
    return call("/client/ms-auth/session/validate", Map.of("svc_session_token", sessionToken, "assertion", assertion));
  }

  /** POSTs JSON with the client's credentials in the body and returns the JSON answer. */
  static Map<String, Object> call(String path, Map<String, Object> fields) throws Exception {
    var body = new LinkedHashMap<String, Object>(Map.of("client_id", CLIENT_ID, "client_secret", CLIENT_SECRET));
    body.putAll(fields);
    var request = HttpRequest.newBuilder(URI.create(BASE_URL + path))
        .timeout(Duration.ofSeconds(30))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(Json.write(body)))
        .build();
    var response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() / 100 == 2) return Json.object(response.body());
    String code = "http_" + response.statusCode(), message = response.body();
    try { // {"error": {"code", "message", "request_id"}}
      var error = Json.object(Json.object(response.body()).get("error"));
      code = (String) error.get("code");
      message = (String) error.get("message");
    } catch (RuntimeException notTheEnvelope) {
    }
    long retryAfter = response.headers().firstValue("retry-after").map(Long::parseLong).orElse(0L);
    throw new ApiError(response.statusCode(), code, message, retryAfter);
  }

  /** $BROWSER when set (as xdg-open and Python do), else the desktop's browser; headless: the printed line only. */
  static void openBrowser(String url) {
    try {
      var browser = System.getenv("BROWSER");
      if (browser != null && !browser.isEmpty()) new ProcessBuilder(browser, url).inheritIO().start();
      else if (Desktop.isDesktopSupported() && Desktop.getDesktop().isSupported(Desktop.Action.BROWSE))
        Desktop.getDesktop().browse(URI.create(url));
    } catch (Exception e) {
      System.err.println("Could not open a browser: " + e.getMessage());
    }
  }

  // ---- Offline assertion checks ----

  static Map<String, Object> jwks;
  static long jwksFetchedAt;

  /**
   * The claims of a genuine, current assertion made for this client (sub = the player's UUID,
   * name = their name); GeneralSecurityException otherwise.
   */
  static Map<String, Object> verifyAssertion(String assertion) throws Exception {
    var parts = assertion.split("\\.", -1);
    if (parts.length != 3) throw new GeneralSecurityException("not a compact JWS");
    var header = jsonPart(parts[0]);
    // Only EdDSA: never "none" or a shared-secret algorithm named by the token itself.
    if (!"EdDSA".equals(header.get("alg")) || !"JWT".equals(header.get("typ")))
      throw new GeneralSecurityException("unexpected header " + header);

    var verifier = Signature.getInstance("Ed25519");
    verifier.initVerify(publicKey((String) header.get("kid")));
    verifier.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
    if (!verifier.verify(b64url(parts[2]))) throw new GeneralSecurityException("bad signature");

    var claims = jsonPart(parts[1]);
    long now = System.currentTimeMillis() / 1000, skew = 60;
    if (!ISSUER.equals(claims.get("iss"))) throw new GeneralSecurityException("issuer " + claims.get("iss"));
    var aud = claims.get("aud");
    if (!(CLIENT_ID.equals(aud) || (aud instanceof List<?> l && l.contains(CLIENT_ID))))
      throw new GeneralSecurityException("made for another client: " + aud);
    if (!(claims.get("exp") instanceof Number exp) || exp.longValue() + skew < now)
      throw new GeneralSecurityException("expired");
    if (!(claims.get("sub") instanceof String)) throw new GeneralSecurityException("no subject");
    return claims;
  }

  /**
   * The key named kid from /.well-known/jwks.json: kept 5 minutes, fetched again for an unknown
   * kid (a new key), but not more than once in 30 seconds (tokens with made-up kids).
   */
  static PublicKey publicKey(String kid) throws Exception {
    for (int attempt = 0; attempt < 2; attempt++) {
      long now = System.currentTimeMillis();
      if (jwks == null || now - jwksFetchedAt > 300_000 || (attempt == 1 && now - jwksFetchedAt > 30_000)) {
        var response = HTTP.send(HttpRequest.newBuilder(URI.create(BASE_URL + "/.well-known/jwks.json")).build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) throw new GeneralSecurityException("JWKS: HTTP " + response.statusCode());
        jwks = Json.object(response.body());
        jwksFetchedAt = now;
      }
      for (var k : (List<?>) jwks.get("keys")) {
        var key = Json.object(k);
        if (key.get("kid").equals(kid) && "OKP".equals(key.get("kty")) && "Ed25519".equals(key.get("crv"))) {
          // An Ed25519 SubjectPublicKeyInfo is a fixed 12-byte prefix and the key's 32 bytes.
          var x = b64url((String) key.get("x"));
          var der = new byte[44];
          System.arraycopy(HexFormat.of().parseHex("302a300506032b6570032100"), 0, der, 0, 12);
          System.arraycopy(x, 0, der, 12, 32);
          return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(der));
        }
      }
    }
    throw new GeneralSecurityException("no published key " + kid);
  }

  static Map<String, Object> jsonPart(String part) throws GeneralSecurityException {
    try {
      return Json.object(new String(b64url(part), StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      throw new GeneralSecurityException("not JSON");
    }
  }

  static byte[] b64url(String s) throws GeneralSecurityException {
    try {
      return Base64.getUrlDecoder().decode(s);
    } catch (IllegalArgumentException e) {
      throw new GeneralSecurityException("not base64url");
    }
  }

  static long num(Object n) { return ((Number) n).longValue(); }

  static String env(String name, String fallback) {
    var v = System.getenv(name);
    if (v != null && !v.isEmpty()) return v;
    if (fallback == null) throw new IllegalStateException(name + " is not set");
    return fallback;
  }

  // ---- A small JSON reader and writer (objects, arrays, strings, numbers, booleans, null) ----

  static final class Json {
    private final String s;
    private int i;
    private Json(String s) { this.s = s; }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Object jsonOrMap) {
      if (jsonOrMap instanceof Map<?, ?> m) return (Map<String, Object>) m;
      var p = new Json((String) jsonOrMap);
      var v = p.value();
      p.ws();
      if (p.i != p.s.length() || !(v instanceof Map)) throw new IllegalArgumentException("not a JSON object");
      return (Map<String, Object>) v;
    }

    static String write(Object v) {
      if (v == null) return "null";
      if (v instanceof String str) {
        var b = new StringBuilder("\"");
        for (char c : str.toCharArray())
          if (c == '"' || c == '\\') b.append('\\').append(c);
          else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        return b.append('"').toString();
      }
      if (v instanceof Map<?, ?> m) {
        var parts = new ArrayList<String>();
        m.forEach((k, val) -> parts.add(write(k) + ":" + write(val)));
        return "{" + String.join(",", parts) + "}";
      }
      return String.valueOf(v); // Boolean, Number
    }

    private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

    private Object value() {
      ws();
      if (i >= s.length()) throw new IllegalArgumentException("unexpected end of JSON");
      char c = s.charAt(i);
      if (c == '{') {
        var m = new LinkedHashMap<String, Object>();
        i++;
        ws();
        if (s.charAt(i) == '}') { i++; return m; }
        do {
          ws();
          var k = (String) value();
          ws();
          expect(':');
          m.put(k, value());
          ws();
        } while (s.charAt(i++) == ',');
        if (s.charAt(i - 1) != '}') throw new IllegalArgumentException("bad JSON object");
        return m;
      }
      if (c == '[') {
        var l = new ArrayList<Object>();
        i++;
        ws();
        if (s.charAt(i) == ']') { i++; return l; }
        do { l.add(value()); ws(); } while (s.charAt(i++) == ',');
        if (s.charAt(i - 1) != ']') throw new IllegalArgumentException("bad JSON array");
        return l;
      }
      if (c == '"') {
        var b = new StringBuilder();
        i++;
        while ((c = s.charAt(i++)) != '"') {
          if (c != '\\') { b.append(c); continue; }
          c = s.charAt(i++);
          switch (c) {
            case 'n' -> b.append('\n');
            case 't' -> b.append('\t');
            case 'r' -> b.append('\r');
            case 'b' -> b.append('\b');
            case 'f' -> b.append('\f');
            case 'u' -> { b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; }
            default -> b.append(c); // \" \\ \/
          }
        }
        return b.toString();
      }
      for (var word : List.of("true", "false", "null"))
        if (s.startsWith(word, i)) {
          i += word.length();
          return word.equals("null") ? null : Boolean.valueOf(word);
        }
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
      if (start == i) throw new IllegalArgumentException("bad JSON at " + start);
      var n = s.substring(start, i);
      return n.matches("-?\\d+") ? (Object) Long.valueOf(n) : (Object) Double.valueOf(n);
    }

    private void expect(char c) {
      if (s.charAt(i++) != c) throw new IllegalArgumentException("expected " + c + " at " + (i - 1));
    }
  }
}
