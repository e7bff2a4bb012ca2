//go:build unix

package confine

// foldNames is false: Unix names are bytes, compared as they are.
const foldNames = false

// osCredentialStores are this system's own credential stores, beyond
// CredentialStores' common ones: none on Unix.
var osCredentialStores []string
