package agent

// ResponseOverhead bounds a response's bytes besides its records.
const ResponseOverhead = responseOverhead
