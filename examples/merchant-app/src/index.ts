// The example merchant app arrives with issue 5 (SDK, CLI and an example tested end to end).
export {}
