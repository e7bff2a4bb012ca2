// Package extend reads what the user and the project add to bridle as
// text: skills (the Agent Skills format, agentskills.io: a folder with a
// SKILL.md whose YAML front matter names and describes it) and prompt
// commands (a Markdown file per slash command, with optional front matter
// and $ARGUMENTS). It finds them in the user's folders and the project's,
// validates them, and renders the skills' catalogue the model reads.
//
// A project's folders are the repository's, and a hostile repository
// writes them: every read goes through sandbox/confine (no link out of
// the folder's root, no hidden path, no named pipe waited on, a bounded
// size), and a file that cannot be used is a Problem, never a failure. A
// skill is text: nothing here runs anything.
package extend
