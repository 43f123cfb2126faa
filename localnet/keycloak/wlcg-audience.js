// Rucio's FTS3 transfertool (and INDIGO IAM's clients) ask for a token's audience with the "audience" form
// parameter of the token request; Keycloak ignores that parameter on a client credentials grant. This mapper,
// attached only to the clients that ask that way (Rucio's), adds each space-separated audience asked for to
// "aud". It returns nothing, so it writes no claim of its own.
var asked = keycloakSession.getContext().getHttpRequest().getDecodedFormParameters().getFirst("audience");
if (asked !== null) {
  String(asked).split(" ").forEach(function (audience) {
    if (audience.length > 0) {
      token.addAudience(audience);
    }
  });
}
exports = null;
