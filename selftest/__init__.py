"""make selftest: the harness checked on made-up input and captured logs, no VM."""
