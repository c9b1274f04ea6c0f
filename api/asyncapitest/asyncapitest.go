// Package asyncapitest validates WebSocket messages against api/asyncapi.yaml: each message is checked
// against the payload schema of the document's message its type (and channelType) names.
package asyncapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tidemark/tidemark/api"
)

// Validator holds the compiled payload schemas of the document's messages.
type Validator struct {
	schemas map[string]*jsonschema.Schema // by message name
}

var compiled = sync.OnceValues(func() (*Validator, error) {
	doc, err := api.AsyncAPIJSON()
	if err != nil {
		return nil, err
	}
	root, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("asyncapi: %w", err)
	}
	var names struct {
		Components struct {
			Messages map[string]json.RawMessage `json:"messages"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &names); err != nil {
		return nil, fmt.Errorf("asyncapi: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	const url = "tidemark:///asyncapi.json"
	if err := c.AddResource(url, root); err != nil {
		return nil, fmt.Errorf("asyncapi: %w", err)
	}
	v := &Validator{schemas: map[string]*jsonschema.Schema{}}
	for name := range names.Components.Messages {
		s, err := c.Compile(url + "#/components/messages/" + name + "/payload")
		if err != nil {
			return nil, fmt.Errorf("asyncapi: message %s: %w", name, err)
		}
		v.schemas[name] = s
	}
	return v, nil
})

// New returns the validator of the embedded document; the document must compile.
func New() (*Validator, error) { return compiled() }

// Messages are the names of the document's messages.
func (v *Validator) Messages() []string {
	out := make([]string, 0, len(v.schemas))
	for n := range v.schemas {
		out = append(out, n)
	}
	return out
}

// ServerMessage names the document's message a server message is, by its type and channelType.
func ServerMessage(msg []byte) (string, error) {
	var head struct {
		Type        string `json:"type"`
		ChannelType string `json:"channelType"`
	}
	if err := json.Unmarshal(msg, &head); err != nil {
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	switch head.Type {
	case "subscription":
		return "Subscription", nil
	case "unsubscribed":
		return "Unsubscribed", nil
	case "error":
		return "Error", nil
	case "create":
		return "CandleChange", nil
	case "init":
		switch head.ChannelType {
		case "candle":
			return "CandleInit", nil
		case "markets":
			return "MarketsInit", nil
		case "pricing":
			return "PricingInit", nil
		}
	case "update":
		switch head.ChannelType {
		case "":
			return "CandleChange", nil
		case "markets":
			return "MarketsUpdate", nil
		case "pricing":
			return "PricingUpdate", nil
		case "notifications":
			return "Notification", nil
		}
	}
	return "", fmt.Errorf("no message of the document has type %q and channelType %q", head.Type, head.ChannelType)
}

// Validate checks a server message against its message's payload schema.
func (v *Validator) Validate(msg []byte) error {
	name, err := ServerMessage(msg)
	if err != nil {
		return err
	}
	return v.ValidateAs(name, msg)
}

// ValidateAs checks msg against the payload schema of the message called name.
func (v *Validator) ValidateAs(name string, msg []byte) error {
	s, ok := v.schemas[name]
	if !ok {
		return fmt.Errorf("the document has no message %s", name)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(msg))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s %s: %w", name, msg, err)
	}
	return nil
}
