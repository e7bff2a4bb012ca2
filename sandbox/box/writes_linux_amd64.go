package box

import "golang.org/x/sys/unix"

// watchedCalls are the calls that can change a file, on amd64.
func watchedCalls() []watchedCall {
	return []watchedCall{
		{nr: unix.SYS_OPEN, kind: callOpen, dirfd: -1, path: 0, dirfd2: -1, path2: -1, flags: 1},
		{nr: unix.SYS_OPENAT, kind: callOpen, dirfd: 0, path: 1, dirfd2: -1, path2: -1, flags: 2},
		{nr: unix.SYS_OPENAT2, kind: callOpenHow, dirfd: 0, path: 1, dirfd2: -1, path2: -1, flags: -1},
		{nr: unix.SYS_CREAT, kind: callCreat, dirfd: -1, path: 0, dirfd2: -1, path2: -1, flags: -1},
		{nr: unix.SYS_TRUNCATE, kind: callTruncate, dirfd: -1, path: 0, dirfd2: -1, path2: -1, flags: -1},
		{nr: unix.SYS_UNLINK, kind: callRemove, dirfd: -1, path: 0, dirfd2: -1, path2: -1, flags: -1},
		{nr: unix.SYS_UNLINKAT, kind: callRemove, dirfd: 0, path: 1, dirfd2: -1, path2: -1, flags: 2},
		{nr: unix.SYS_RENAME, kind: callRename, dirfd: -1, path: 0, dirfd2: -1, path2: 1, flags: -1},
		{nr: unix.SYS_RENAMEAT, kind: callRename, dirfd: 0, path: 1, dirfd2: 2, path2: 3, flags: -1},
		{nr: unix.SYS_RENAMEAT2, kind: callRename, dirfd: 0, path: 1, dirfd2: 2, path2: 3, flags: 4},
		{nr: unix.SYS_LINK, kind: callLink, dirfd: -1, path: 0, dirfd2: -1, path2: 1, flags: -1},
		{nr: unix.SYS_LINKAT, kind: callLink, dirfd: 0, path: 1, dirfd2: 2, path2: 3, flags: -1},
		{nr: unix.SYS_MKNOD, kind: callMknod, dirfd: -1, path: 0, dirfd2: -1, path2: -1, flags: 1},
		{nr: unix.SYS_MKNODAT, kind: callMknod, dirfd: 0, path: 1, dirfd2: -1, path2: -1, flags: 2},
	}
}
