//go:build unix

package confine

// foldNames is false: Unix names are bytes, compared as they are.
const foldNames = false
