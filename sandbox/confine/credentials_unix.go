//go:build unix

package confine

// osCredentialStores are this system's own credential stores, beyond
// CredentialStores' common ones: none on Unix.
var osCredentialStores []string
