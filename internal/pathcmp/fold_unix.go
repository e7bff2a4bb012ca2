//go:build unix

package pathcmp

// fold is false: Unix names are bytes, compared as they are.
const fold = false
