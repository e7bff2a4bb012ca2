// Package confine keeps the file tools inside the workspace. A Root opens
// files under the session's directory and the editor's additional
// directories through os.Root, so "..", absolute paths and links cannot
// lead out, even when a link is swapped in between a check and a use; it
// refuses the hidden paths (bridle's own files, credential stores) by name
// and by file identity, and refuses every use while the workspace's name
// no longer leads to the directory it opened. The walks grep and glob use,
// and ProjectFiles (the repository's AGENTS.md and settings), read the
// same way. It imports no tool: the box confines commands, this package
// confines bridle's own reads and writes for the model.
package confine
