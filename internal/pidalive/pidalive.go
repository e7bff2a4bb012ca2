// Package pidalive tells whether a process runs, by its pid: what a lease
// or a temp directory named after a bridle process asks of its owner. A
// leaf: it imports nothing of the project.
package pidalive
