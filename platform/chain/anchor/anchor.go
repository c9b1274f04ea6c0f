// Package anchor gives the discriminators of programs built with Anchor: the first eight bytes of
// an account's data, of an event's payload and of an instruction's data, which say what follows.
package anchor

import "crypto/sha256"

// DiscriminatorSize is the size of a discriminator in bytes.
const DiscriminatorSize = 8

// Discriminator is the first eight bytes of sha256(namespace ":" name).
type Discriminator [DiscriminatorSize]byte

func discriminator(namespace, name string) Discriminator {
	sum := sha256.Sum256([]byte(namespace + ":" + name))
	return Discriminator(sum[:DiscriminatorSize])
}

// EventDiscriminator is the discriminator of the event struct name ("OrderActionRecord").
func EventDiscriminator(name string) Discriminator { return discriminator("event", name) }

// AccountDiscriminator is the discriminator of the account struct name ("User").
func AccountDiscriminator(name string) Discriminator { return discriminator("account", name) }

// InstructionDiscriminator is the discriminator of the instruction whose Rust function is name
// ("place_orders"): the IDL's camelCase name in snake case.
func InstructionDiscriminator(name string) Discriminator { return discriminator("global", name) }
