// A real OpenID Connect provider for the sign-in tests: npm's oidc-provider (certified by
// the OpenID Foundation), installed by scripts/install-auth-providers into a cache directory
// named by OIDC_PROVIDER_MODULES, configured from the JSON in OIDC_TEST_CONFIG:
//   {"port", "issuer", "client": {client_id, client_secret, redirect_uris},
//    "accounts": {login: {email, email_verified, name, groups?}}, "jwks": {"keys": [private JWK]}}
// The "groups" scope releases the account's "groups" claim (as Keycloak, Authentik... do).
// Its own development login and consent pages (devInteractions) take any password for a
// login listed in "accounts". Loopback only.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.OIDC_PROVIDER_MODULES;
const config = JSON.parse(process.env.OIDC_TEST_CONFIG);
const { default: Provider } = await import(
  pathToFileURL(join(modules, "node_modules", "oidc-provider", "lib", "index.js")).href
);

const provider = new Provider(config.issuer, {
  clients: [
    {
      ...config.client,
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  jwks: config.jwks,
  pkce: { required: () => true, methods: ["S256"] },
  scopes: ["openid", "email", "profile", "groups"],
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] },
  cookies: { keys: ["palaver-test-cookie-key"] },
  features: { devInteractions: { enabled: true } },
  ttl: { IdToken: config.id_token_ttl || 3600 },
  async findAccount(ctx, id) {
    const account = config.accounts[id];
    if (!account) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...account }; } };
  },
});
provider.on("server_error", (ctx, error) => console.error("server_error", error));
provider.listen(config.port, "127.0.0.1", () => console.log(`listening ${config.issuer}`));
