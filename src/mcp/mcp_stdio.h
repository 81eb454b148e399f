// The MCP stdio transport of `dbstreams mcp`: a desktop AI client starts it as a subprocess and
// writes newline-delimited JSON-RPC messages to its standard input; each is forwarded to the
// dbstreams server's Streamable HTTP endpoint (<url>/mcp, with the API key), where the tools
// run against the live server (its connections, streams, runs and logs), and the answer is
// written to standard output, one line per message.
//
// Contract: stdout carries only MCP messages; diagnostics go to `err`. The session id the
// server gives at initialize is sent with every later message and ended (DELETE) at end of
// input. When the server cannot be reached or answers an HTTP error, a request gets a JSON-RPC
// error (-32603) naming the cause; a notification is dropped with a line on `err`. Returns 0
// at end of input.
#pragma once

#include <iosfwd>
#include <string>

namespace dbs::mcp {

int RunStdioBridge(const std::string& url, const std::string& api_key, std::istream& in,
                   std::ostream& out, std::ostream& err);

}  // namespace dbs::mcp
