"""How people and assistants reach the Agent: the `kgplan` command line, the HTTP API with its web page, and
the MCP server. They translate to and from the Agent; none holds agent logic."""
