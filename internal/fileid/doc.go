// Package fileid tells what a file is, whatever its name: its identity
// (device and inode on Unix; volume serial number and file index on
// Windows, read from an open handle) and its number of hard links. On
// Unix both come with every stat; on Windows a FileInfo carries neither,
// so they are read from a handle (GetFileInformationByHandle), opened
// with as little access as that needs. A leaf: it imports nothing of
// the project.
package fileid

// ID is a file's identity: two names with the same ID are one file.
type ID struct{ Dev, Ino uint64 }
