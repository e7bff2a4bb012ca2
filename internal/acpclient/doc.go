// Package acpclient is the client end of an ACP connection to a bridle
// process over its stdin and stdout: requests and their answers,
// notifications, bridle's own requests (permission questions), and every
// message bridle wrote, kept for inspection. The end-to-end harness
// (internal/acptest) and `bridle demo` both drive bridle through it.
package acpclient
