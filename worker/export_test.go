package worker

// CloseErrorOf is how the worker reads a close frame's error.
var CloseErrorOf = closeError
