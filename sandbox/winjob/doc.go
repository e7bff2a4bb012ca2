// Package winjob keeps a Windows process tree in a Job Object: every
// process a command starts, and everything those start, is in the job
// from its first instruction (the first process is created suspended,
// put in the job, then let run), no process may leave it, the whole tree
// is killed at once (TerminateJobObject), and when bridle closes the job
// or dies (KILL_ON_JOB_CLOSE), and the job caps the number of processes
// alive at once and the memory they commit together. It is what Windows
// has of the Linux box's PID namespace and cgroup; on other systems the
// package is empty.
package winjob
