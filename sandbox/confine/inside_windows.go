package confine

// foldNames is true: Windows names compare without regard to case, and
// Win32 drops the dots and spaces that end a name.
const foldNames = true
