// Package datasets generates the project-management workspace ctxcode's
// tasks ask about, the graded tasks themselves (eight templates with gold
// programs and reference solutions), and the grader.
//
// A dataset is a folder of five JSONL files — teams, users, projects, tasks,
// events — and a manifest.json (tier, seed, generator version, row counts
// and the sha256 of each file). Generation is deterministic: the same tier
// and seed give byte-identical files.
//
// Non-goals: realism beyond what makes the questions interesting (skewed
// team sizes, a minority of blocked tasks, tasks that bounce between review
// and in_progress).
package datasets

import (
	"fmt"
	"strings"
)

// Team is one line of teams.jsonl.
type Team struct {
	ID   string `json:"id"` // "T01"
	Name string `json:"name"`
}

// User is one line of users.jsonl.
type User struct {
	ID     string `json:"id"`   // "U001"
	Name   string `json:"name"` // first and last name, unique
	TeamID string `json:"team_id"`
	Role   string `json:"role"` // engineer|designer|manager|qa
}

// Project is one line of projects.jsonl.
type Project struct {
	ID     string `json:"id"`   // "P01"
	Name   string `json:"name"` // unique
	TeamID string `json:"team_id"`
	LeadID string `json:"lead_id"`
	Status string `json:"status"` // active|paused|archived
}

// TaskRecord is one line of tasks.jsonl (Task is a graded question).
type TaskRecord struct {
	ID            string  `json:"id"` // "K00001"
	ProjectID     string  `json:"project_id"`
	Title         string  `json:"title"`
	Status        string  `json:"status"`   // todo|in_progress|review|blocked|done
	Priority      string  `json:"priority"` // low|medium|high|urgent
	AssigneeID    *string `json:"assignee_id"`
	ReporterID    string  `json:"reporter_id"`
	CreatedAt     string  `json:"created_at"` // RFC 3339 UTC, within 2025
	DueDate       *string `json:"due_date"`   // YYYY-MM-DD or null
	EstimateHours float64 `json:"estimate_hours"`
}

// Event is one line of events.jsonl.
type Event struct {
	ID     string  `json:"id"` // "E000001"
	TaskID string  `json:"task_id"`
	UserID string  `json:"user_id"`
	Action string  `json:"action"` // created|commented|reassigned|status_changed
	At     string  `json:"at"`     // RFC 3339 UTC
	From   *string `json:"from"`   // a status or user id for status_changed/reassigned, else null
	To     *string `json:"to"`
}

// Field values.
var (
	Roles           = []string{"engineer", "designer", "manager", "qa"}
	ProjectStatuses = []string{"active", "paused", "archived"}
	TaskStatuses    = []string{"todo", "in_progress", "review", "blocked", "done"}
	Priorities      = []string{"low", "medium", "high", "urgent"}
	Actions         = []string{"created", "commented", "reassigned", "status_changed"}
)

// Dataset is a whole workspace in memory.
type Dataset struct {
	Tier     string
	Seed     int64
	Teams    []Team
	Users    []User
	Projects []Project
	Tasks    []TaskRecord
	Events   []Event
}

// Tier is a dataset size.
type Tier struct {
	Name                                  string
	Teams, Users, Projects, Tasks, Events int
}

// Tiers are the sizes ctxcode generates, smallest first.
var Tiers = []Tier{
	{Name: "s", Teams: 3, Users: 30, Projects: 8, Tasks: 500, Events: 2000},
	{Name: "m", Teams: 10, Users: 100, Projects: 25, Tasks: 1500, Events: 6000},
	{Name: "xl", Teams: 30, Users: 300, Projects: 80, Tasks: 5000, Events: 20000},
}

// ParseTier finds a tier by name; the error lists the tiers.
func ParseTier(name string) (Tier, error) {
	var names []string
	for _, t := range Tiers {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Tier{}, fmt.Errorf("unknown tier %q: expected one of %s", name, strings.Join(names, ", "))
}

// Files are the data files of a dataset, in the order they are written.
var Files = []string{"teams", "users", "projects", "tasks", "events"}
