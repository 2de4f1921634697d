package agent

import "context"

// ReadRangeVerified reads partition p of topic from offset through
// readRange and returns, per batch run read, whether its bytes came from a
// whole file verified when read.
func ReadRangeVerified(ctx context.Context, a *Agent, topic string, p int32, offset int64, maxBytes int) ([]bool, error) {
	t, err := a.topics.get(ctx, topic)
	if err != nil {
		return nil, err
	}
	_, _, verified, _, err := a.readRange(ctx, t.ID, p, offset, maxBytes)
	return verified, err
}
