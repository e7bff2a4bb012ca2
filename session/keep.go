package session

import "github.com/bridle-dev/bridle/tools"

// keepOutput keeps the whole output of call key, which made no artifact,
// as an artifact before the context window cuts it: the cut names it, so
// every shortened output has a way back to exactly what the call gave
// (read_artifact), not only "rerun the call". It returns the artifact's
// id, or "" when the session keeps no artifacts or the write failed.
func (s *Session) keepOutput(key, whole string) string {
	if s.box.Artifacts == nil {
		return ""
	}
	id := tools.ArtifactID(key)
	if err := s.box.Artifacts.Keep(id, whole); err != nil {
		s.m.log.Warn("a cut output was not kept whole", "session", s.row.ID, "artifact", id, "err", err)
		return ""
	}
	return id
}
