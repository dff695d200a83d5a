package main

import (
	"github.com/spf13/cobra"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

func newSchemaCommand(io streams) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the fabric description file",
		Long: `schema prints the JSON Schema (draft 2020-12) of the fabric description file. It is
JSON whatever --output says: the schema has no table form.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.out.Write(fabric.JSONSchema())
			return err
		},
	}
}
