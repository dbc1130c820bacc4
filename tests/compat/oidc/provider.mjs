// A real OpenID provider for the sign-in test: the `oidc-provider` package (OpenID Certified),
// with its development login pages, one confidential client (Chronicle) and the people the test
// names. Each start signs with a fresh RSA key, so a restart is a key rotation.
//
// Environment: PORT, CLIENT_SECRET, REDIRECT_URI, ACCOUNTS (JSON: sub -> claims). A request to
// /test/tamper?on=1 makes the token endpoint alter each ID token's payload after signing (the
// signature then no longer matches), /test/tamper?on=0 stops that.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import Provider from "oidc-provider";

const port = Number(process.env.PORT);
const accounts = JSON.parse(process.env.ACCOUNTS);
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), use: "sig", alg: "RS256" };

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: "chronicle",
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  jwks: { keys: [jwk] },
  cookies: { keys: [randomUUID()] },
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "given_name", "family_name", "preferred_username", "groups"],
  },
  conformIdTokenClaims: false,
  findAccount: async (ctx, sub) =>
    accounts[sub] && { accountId: sub, claims: async () => ({ sub, ...accounts[sub] }) },
  features: { devInteractions: { enabled: true } },
});

let tamper = false;
provider.use(async (ctx, next) => {
  if (ctx.path === "/test/tamper") {
    tamper = ctx.query.on === "1";
    ctx.body = { tamper };
    return;
  }
  await next();
  if (tamper && ctx.path === "/token" && ctx.body && ctx.body.id_token) {
    const [header, payload, signature] = ctx.body.id_token.split(".");
    const claims = JSON.parse(Buffer.from(payload, "base64url"));
    claims.email = "mallory@example.com";
    const forged = Buffer.from(JSON.stringify(claims)).toString("base64url");
    ctx.body = { ...ctx.body, id_token: `${header}.${forged}.${signature}` };
  }
});

provider.listen(port, "127.0.0.1", () => {
  console.log(`provider listening on http://127.0.0.1:${port}`);
});
