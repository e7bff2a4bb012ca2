package pathcmp

// fold is true: Windows names compare without regard to case, and Win32
// drops the dots and spaces that end a name.
const fold = true
