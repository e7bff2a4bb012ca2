// Command sleeper waits until it is killed: the long-lived process tests
// start inside a command's process tree, on any system (Windows has no
// sleep command). Its arguments are not read: tests find it by them.
package main

import "time"

func main() {
	for {
		time.Sleep(time.Hour)
	}
}
