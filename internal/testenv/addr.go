package testenv

// DeadAddr is an address nothing answers at, for a server that must be
// down (a connection is refused at once): a privileged port on the
// loopback, which no test process takes, unlike a port that was free a
// moment ago. A server a test starts binds 127.0.0.1:0 and reports the
// port it got (floe's -addr-file) instead.
const DeadAddr = "127.0.0.1:1"
