// The WLCG JWT profile 1.0 makes "nbf" mandatory (scitokens-cpp, and so XRootD, refuse a token without
// it) and Keycloak sets only "iat": a token is valid from the moment it is issued. The value is exported
// (the mapper writes it as the "nbf" claim) rather than set with token.nbf(), which would write it twice.
exports = token.getIat();
