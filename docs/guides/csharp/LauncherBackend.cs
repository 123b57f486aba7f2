// A launcher backend signing a player in through mc-platform, in C# (.NET 8 or later):
// HttpClient and System.Text.Json for the calls, BouncyCastle for the assertion's Ed25519
// signature (.NET has no Ed25519 of its own).
//
//   MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... MCP_CLIENT_SECRET=... dotnet run
//   MCP_BASE_URL=http://localhost:3000 MCP_CLIENT_ID=... dotnet run -- verify <assertion>
//
// The first starts a login, opens the player's browser, polls until the player has approved,
// validates the session token and verifies the signed assertion offline; with `device` (dotnet run
// -- device) it shows a code to type on another device instead of opening a browser. The second
// verifies an assertion only.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Net.Http;
using System.Text;
using System.Text.Json.Nodes;
using System.Threading;
using System.Threading.Tasks;
using Org.BouncyCastle.Crypto.Parameters;
using Org.BouncyCastle.Crypto.Signers;

public static class LauncherBackend
{
    static readonly string BaseUrl = Env("MCP_BASE_URL", "http://localhost:3000").TrimEnd('/');
    // The service's PUBLIC_URL: the same as MCP_BASE_URL unless the backend reaches it at another address.
    static readonly string Issuer = Env("MCP_ISSUER", BaseUrl);
    static readonly string ClientId = Env("MCP_CLIENT_ID", "");
    static readonly string ClientSecret = Env("MCP_CLIENT_SECRET", ""); // on the backend only, never in the launcher
    static readonly HttpClient Http = new HttpClient { Timeout = TimeSpan.FromSeconds(30) };

    public static async Task<int> Main(string[] args)
    {
        if (args.Length == 2 && args[0] == "verify")
        {
            try
            {
                var claims = await VerifyAssertion(args[1]);
                Console.WriteLine($"Assertion verified: sub={claims["sub"]} name={claims["name"]} exp={claims["exp"]}");
                return 0;
            }
            catch (AssertionRejected e)
            {
                Console.Error.WriteLine($"Assertion rejected: {e.Message}");
                return 1;
            }
        }

        string token;
        try
        {
            token = await SignIn("xyz", device: args.Length == 1 && args[0] == "device");
        }
        catch (SignInFailed e)
        {
            Console.Error.WriteLine($"Sign-in refused: {e.Message}");
            return 1;
        }
        // Store the token with the player's launcher session; validate it whenever you need the player.
        var session = await Validate(token, assertion: true);
        if (!(bool)session["valid"])
        {
            Console.Error.WriteLine("The session is not valid");
            return 1;
        }
        Console.WriteLine($"Signed in: {session["mc_username"]} ({session["mc_uuid"]}), session valid until {session["expires_at"]}");

        var verified = await VerifyAssertion((string)session["assertion"]);
        if ((string)verified["sub"] != (string)session["mc_uuid"]) throw new AssertionRejected("the assertion names another player");
        Console.WriteLine($"Assertion verified: sub={verified["sub"]} name={verified["name"]} exp={verified["exp"]}");
        return 0;
    }

    // ---- The login ----

    /// <summary>The login ended without a session: denied (with a code such as consent_denied) or expired.</summary>
    public class SignInFailed : Exception
    {
        public SignInFailed(string code) : base(code) { }
    }

    /// <summary>An answer other than 2xx, with the code and message of the service's error envelope.</summary>
    public class ApiError : Exception
    {
        public int Status { get; }
        public TimeSpan RetryAfter { get; }
        public ApiError(int status, string code, string message, TimeSpan retryAfter) : base($"{status} {code}: {message}")
        {
            Status = status;
            RetryAfter = retryAfter;
        }
    }

    /// <summary>Runs one login to its end and returns the session token (svc_session_token).</summary>
    static async Task<string> SignIn(string clientState, bool device)
    {
        var body = new JsonObject { ["client_state"] = clientState };
        if (device) body["flow"] = "device";
        var started = await Call("/client/ms-auth/start", body);
        if (device)
        {
            // No browser here (a console, a TV): the player types the code on their phone or computer.
            Console.WriteLine($"On another device, open {started["verification_uri"]} and enter {started["user_code"]}");
        }
        else
        {
            // Here your backend hands auth_url to the launcher, which opens it in the player's browser.
            Console.WriteLine($"Open this address in the player's browser: {started["auth_url"]}");
            OpenBrowser((string)started["auth_url"]);
        }

        var interval = TimeSpan.FromSeconds((int)started["interval"]);
        string last = null;
        while (true)
        {
            await Task.Delay(interval);
            JsonNode polled;
            try
            {
                polled = await Call("/client/ms-auth/poll", new JsonObject { ["auth_request_id"] = (string)started["auth_request_id"] });
            }
            catch (ApiError e) when (e.Status == 429)
            {
                await Task.Delay(e.RetryAfter > interval ? e.RetryAfter : interval); // over the poll budget: wait as told
                continue;
            }
            var status = (string)polled["status"]; // pending -> authenticated -> authorized | denied | expired
            if (status != last) Console.WriteLine($"Status: {status}");
            last = status;
            if (status == "authorized") return (string)polled["svc_session_token"];
            if (status == "denied" || status == "expired") throw new SignInFailed((string)polled["error"]);
        }
    }

    /// <summary>{valid, mc_uuid, mc_username, expires_at} (and a signed assertion when asked); {valid: false} otherwise.</summary>
    static Task<JsonNode> Validate(string sessionToken, bool assertion) =>
        Call("/client/ms-auth/session/validate", new JsonObject { ["svc_session_token"] = sessionToken, ["assertion"] = assertion });

    /// <summary>POSTs JSON with the client's credentials in the body and returns the JSON answer.</summary>
    static async Task<JsonNode> Call(string path, JsonObject body)
    {
        body["client_id"] = ClientId;
        body["client_secret"] = ClientSecret;
        var content = new StringContent(body.ToJsonString(), Encoding.UTF8, "application/json");
        using (var response = await Http.PostAsync(BaseUrl + path, content))
        {
            var text = await response.Content.ReadAsStringAsync();
            if (response.IsSuccessStatusCode) return JsonNode.Parse(text);
            string code = $"http_{(int)response.StatusCode}", message = text;
            try
            { // {"error": {"code", "message", "request_id"}}
                var error = JsonNode.Parse(text)["error"];
                code = (string)error["code"];
                message = (string)error["message"];
            }
            catch (Exception) { }
            var retryAfter = response.Headers.RetryAfter?.Delta ?? TimeSpan.Zero;
            throw new ApiError((int)response.StatusCode, code, message, retryAfter);
        }
    }

    /// <summary>$BROWSER when set (as xdg-open and Python do), else the system's default browser.</summary>
    static void OpenBrowser(string url)
    {
        try
        {
            var browser = Environment.GetEnvironmentVariable("BROWSER");
            var start = string.IsNullOrEmpty(browser)
                ? new ProcessStartInfo(url) { UseShellExecute = true }
                : new ProcessStartInfo(browser, url);
            Process.Start(start);
        }
        catch (Exception e)
        {
            Console.Error.WriteLine($"Could not open a browser: {e.Message}");
        }
    }

    // ---- Offline assertion checks ----

    public class AssertionRejected : Exception
    {
        public AssertionRejected(string why) : base(why) { }
    }

    static readonly SemaphoreSlim JwksLock = new SemaphoreSlim(1, 1);
    static Dictionary<string, Ed25519PublicKeyParameters> jwks;
    static DateTime jwksFetchedAt;

    /// <summary>The claims of a genuine, current assertion made for this client (sub = the player's UUID, name = their name).</summary>
    static async Task<JsonNode> VerifyAssertion(string assertion)
    {
        var parts = assertion.Split('.');
        if (parts.Length != 3) throw new AssertionRejected("not a compact JWS");
        var header = JsonPart(parts[0]);
        // Only EdDSA: never "none" or a shared-secret algorithm named by the token itself.
        if ((string)header["alg"] != "EdDSA" || (string)header["typ"] != "JWT")
            throw new AssertionRejected($"unexpected header {header.ToJsonString()}");

        var verifier = new Ed25519Signer();
        verifier.Init(false, await PublicKey((string)header["kid"]));
        var signed = Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]);
        verifier.BlockUpdate(signed, 0, signed.Length);
        if (!verifier.VerifySignature(Base64Url(parts[2]))) throw new AssertionRejected("bad signature");

        var claims = JsonPart(parts[1]);
        long now = DateTimeOffset.UtcNow.ToUnixTimeSeconds(), skew = 60;
        if ((string)claims["iss"] != Issuer) throw new AssertionRejected($"issuer {claims["iss"]}");
        var aud = claims["aud"];
        var audiences = aud is JsonArray list ? list.Select(a => (string)a).ToList() : new List<string> { (string)aud };
        if (!audiences.Contains(ClientId)) throw new AssertionRejected($"made for another client: {aud}");
        if (claims["exp"] == null || (long)claims["exp"] + skew < now) throw new AssertionRejected("expired");
        if (claims["sub"] == null) throw new AssertionRejected("no subject");
        return claims;
    }

    /// <summary>
    /// The key named kid from /.well-known/jwks.json: kept 5 minutes, fetched again for an unknown
    /// kid (a new key), but not more than once in 30 seconds (tokens with made-up kids).
    /// </summary>
    static async Task<Ed25519PublicKeyParameters> PublicKey(string kid)
    {
        await JwksLock.WaitAsync();
        try
        {
            for (var attempt = 0; attempt < 2; attempt++)
            {
                var age = DateTime.UtcNow - jwksFetchedAt;
                if (jwks == null || age > TimeSpan.FromMinutes(5) || (attempt == 1 && age > TimeSpan.FromSeconds(30)))
                {
                    var set = JsonNode.Parse(await Http.GetStringAsync(BaseUrl + "/.well-known/jwks.json"));
                    var keys = new Dictionary<string, Ed25519PublicKeyParameters>();
                    foreach (var k in set["keys"].AsArray())
                    {
                        if ((string)k["kty"] != "OKP" || (string)k["crv"] != "Ed25519") continue;
                        var x = Base64Url((string)k["x"]);
                        if (x.Length == Ed25519PublicKeyParameters.KeySize) keys[(string)k["kid"]] = new Ed25519PublicKeyParameters(x, 0);
                    }
                    jwks = keys;
                    jwksFetchedAt = DateTime.UtcNow;
                }
                Ed25519PublicKeyParameters key;
                if (kid != null && jwks.TryGetValue(kid, out key)) return key;
            }
            throw new AssertionRejected($"no published key {kid}");
        }
        finally
        {
            JwksLock.Release();
        }
    }

    static JsonNode JsonPart(string part)
    {
        try
        {
            return JsonNode.Parse(Encoding.UTF8.GetString(Base64Url(part)));
        }
        catch (Exception e) when (!(e is AssertionRejected))
        {
            throw new AssertionRejected("not JSON");
        }
    }

    static byte[] Base64Url(string s)
    {
        var b64 = s.Replace('-', '+').Replace('_', '/');
        try
        {
            return Convert.FromBase64String(b64.PadRight(b64.Length + (4 - b64.Length % 4) % 4, '='));
        }
        catch (FormatException)
        {
            throw new AssertionRejected("not base64url");
        }
    }

    static string Env(string name, string fallback)
    {
        var v = Environment.GetEnvironmentVariable(name);
        return string.IsNullOrEmpty(v) ? fallback : v;
    }
}
