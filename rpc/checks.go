package rpc

import "github.com/bridle-dev/bridle/acp"

// The checks of the fields ACP requires, which a decode into Go values
// cannot tell from empty ones. Each runs on the params decoded once.

func checkInitialize(p *initializeParams) error {
	if p.ProtocolVersion == nil {
		return missing("protocolVersion")
	}
	return nil
}

func checkAuthenticate(p *acp.AuthenticateRequest) error {
	if p.MethodID == "" {
		return missing("methodId")
	}
	return nil
}

func checkNew(p *acp.NewSessionRequest) error {
	if p.Cwd == "" {
		return missing("cwd")
	}
	return checkServers(p.MCPServers)
}

func checkLoad(p *acp.LoadSessionRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	return checkServers(p.MCPServers)
}

func checkResume(p *acp.ResumeSessionRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	return checkServers(p.MCPServers)
}

func checkFork(p *acp.ForkSessionRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	if p.Cwd == "" {
		return missing("cwd")
	}
	return checkServers(p.MCPServers)
}

// checkServers refuses the MCP servers that bridle does not run: those
// the client serves over ACP itself (the unstable schema's "acp" type),
// which initialize's mcpCapabilities.acp says bridle does not take.
func checkServers(servers []acp.MCPServer) error {
	for i, sv := range servers {
		if sv.Acp != nil {
			return invalidField("mcpServers[%d]", "is of type \"acp\", which bridle does not support (initialize's mcpCapabilities.acp is false); give a stdio, http or sse server", i)
		}
	}
	return nil
}

func checkClose(p *acp.CloseSessionRequest) error { return needSession(p.SessionID) }

func checkDelete(p *acp.DeleteSessionRequest) error { return needSession(p.SessionID) }

func checkSetMode(p *acp.SetSessionModeRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	if p.ModeID == "" {
		return missing("modeId")
	}
	return nil
}

func checkSetConfigOption(p *acp.SetSessionConfigOptionRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	if p.ConfigID == "" {
		return missing("configId")
	}
	if p.Value == nil {
		return missing("value")
	}
	return nil
}

func checkPrompt(p *acp.PromptRequest) error {
	if err := needSession(p.SessionID); err != nil {
		return err
	}
	if p.Prompt == nil {
		return missing("prompt")
	}
	return nil
}

func checkEvents(p *EventsRequest) error { return needSession(p.SessionID) }

func needSession(id string) error {
	if id == "" {
		return missing("sessionId")
	}
	return nil
}
