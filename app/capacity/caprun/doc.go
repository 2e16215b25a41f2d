// Package caprun runs capacity and concurrency studies: StartRun starts llama-server once per
// server lifetime of the plan's schedule (slots × pass), drives the load generator through each
// client level and the quality guard where the plan gates quality, writes the run folder that
// app/capacity assembles, and resumes a folder a killed run left behind. Engine runs a
// registered study into its notebook. It is the half of the capacity kind that starts
// processes; plans, assembly, gates and reports are app/capacity's.
package caprun
