package e2e

// Scenarios the end-to-end tests play with the scripted model.

// toolTurn answers the first prompt with a tool call and a final answer,
// and the second prompt with text.
const toolTurn = `{
  "turns": [
    {"calls": [
      {"thinking": "Look first.", "text": "Reading the notes.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
      {"text": "The notes say: hello from the workspace."}
    ]},
    {"calls": [{"text": "Second answer."}]}
  ]
}`

// slowTurn streams long enough to be cancelled, then answers the next
// prompt at once.
const slowTurn = `{
  "turns": [
    {"calls": [{"text": ["one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight ", "nine ", "ten "], "delay_ms": 150}]},
    {"calls": [{"text": "After the cancel."}]}
  ]
}`
