package eventstore

import (
	"encoding/json"
	"fmt"
)

// MessagePayload is the payload of the messages that carry words: a prompt,
// an answer, which names the input request it answers, and an interrupt.
// Other message types carry payloads of their own, which the journal keeps
// as they were sent.
type MessagePayload struct {
	Text      string `json:"text"`
	RequestID string `json:"requestId,omitempty"`
}

// messagePayload is MessagePayload as DecodePayload reads it: encoding/json
// names the type in its errors, and a delivery that fails on a payload
// records that error as its reason, worded as it always was.
type messagePayload struct {
	Text      string `json:"text"`
	RequestID string `json:"requestId,omitempty"`
}

// DecodePayload reads m's payload as a MessagePayload. A null payload, or
// an object without the fields, reads as their zero values; anything else
// that is not an object whose "text" and "requestId" are strings is an
// error.
func (m *MessageAccepted) DecodePayload() (MessagePayload, error) {
	var p messagePayload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return MessagePayload{}, m.payloadError(err)
	}
	return MessagePayload(p), nil
}

// Text returns the "text" of m's payload, read alone: a "requestId" that is
// not a string does not stop it. A payload that is null or has no text (an
// interrupt's {"hard": true}) returns ErrNoText, so that an empty text can
// be told from none; one that is not an object, or whose text is not a
// string, returns another error.
func (m *MessageAccepted) Text() (string, error) {
	var p struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return "", m.payloadError(err)
	}
	if p.Text == nil {
		return "", fmt.Errorf("message %s: %w", m.MessageID, ErrNoText)
	}
	return *p.Text, nil
}

// RequestID returns the input request m answers: the "requestId" of its
// payload, read alone, and "" when it names none. A payload that is not an
// object, or whose requestId is not a string, is an error.
func (m *MessageAccepted) RequestID() (string, error) {
	var p struct {
		RequestID string `json:"requestId"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return "", m.payloadError(err)
	}
	return p.RequestID, nil
}

func (m *MessageAccepted) payloadError(err error) error {
	return fmt.Errorf("message %s: payload is not {\"text\": …}: %w", m.MessageID, err)
}
