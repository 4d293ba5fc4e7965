// Package auth holds the authentication providers and authorization rules of
// a Pulsar broker, as pure functions over credentials and policies: a JSON
// Web Token verifier (HS256/384/512, RS256/384/512, ES256/384/512) and
// signer, an htpasswd checker for Basic authentication, the choice of
// provider and of the anonymous role as Pulsar's AuthenticationService makes
// it, and the permission rules of Pulsar's default authorization provider
// (super-users, tenant admins, namespace and topic grants).
//
// It does no I/O and keeps no clock: callers read files, hand over the
// bytes, and pass the time.
package auth
