//! The organization itself.

use crate::events::{Envelope, Event};
use serde_json::{json, Value};

/// Organization-wide settings.
#[derive(Debug, Clone, Default)]
pub struct Realm {
    /// False until `RealmCreated` has been folded.
    pub exists: bool,
    pub name: String,
    pub description: String,
    /// Creation time, milliseconds since the epoch.
    pub date_created_ms: i64,
}

impl Realm {
    pub fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::RealmCreated { name, description } => {
                self.exists = true;
                self.name = name.clone();
                self.description = description.clone();
                self.date_created_ms = env.at;
            }
            Event::UserCreated { .. }
            | Event::ApiKeyRegenerated { .. }
            | Event::UserDeactivated { .. }
            | Event::UserReactivated { .. } => {}
        }
    }

    pub fn dump(&self) -> Value {
        json!({
            "exists": self.exists,
            "name": self.name,
            "description": self.description,
            "date_created_ms": self.date_created_ms,
        })
    }
}
