// Package e2e tests the real bridle binary over real pipes, as editors
// use it.
package e2e
