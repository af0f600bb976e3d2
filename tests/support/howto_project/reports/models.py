"""No models: the app holds a task, and the command the page adds."""
