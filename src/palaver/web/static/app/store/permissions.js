// Who may do what, from the realm settings in the register state. The server checks again;
// these only decide which buttons to offer.

// A group-setting value is a group id, or {direct_members, direct_subgroups}.
export function userInGroupSetting(setting, userId, groupsById) {
  if (setting === undefined || setting === null) return false;
  if (typeof setting === "number") return userInGroup(setting, userId, groupsById, new Set());
  if ((setting.direct_members || []).includes(userId)) return true;
  return (setting.direct_subgroups || []).some((id) => userInGroup(id, userId, groupsById, new Set()));
}

function userInGroup(groupId, userId, groupsById, seen) {
  if (seen.has(groupId)) return false;
  seen.add(groupId);
  const group = groupsById.get(groupId);
  if (!group) return false;
  if ((group.members || []).includes(userId)) return true;
  return (group.direct_subgroup_ids || []).some((id) => userInGroup(id, userId, groupsById, seen));
}

function withinLimit(limitSeconds, sentAt, now) {
  return !limitSeconds || now - sentAt <= limitSeconds;
}

export class Permissions {
  constructor(realm, myId, groups, isModerator) {
    this.realm = realm;
    this.myId = myId;
    this.groupsById = new Map((groups || []).map((g) => [g.id, g]));
    this.isModerator = isModerator;
  }

  can(settingName) {
    return userInGroupSetting(this.realm[settingName], this.myId, this.groupsById);
  }

  canEdit(message, now = Date.now() / 1000) {
    return Boolean(this.realm.realm_allow_message_editing) && message.sender_id === this.myId &&
      withinLimit(this.realm.realm_message_content_edit_limit_seconds, message.timestamp, now);
  }

  canDelete(message, now = Date.now() / 1000) {
    if (this.can("realm_can_delete_any_message_group")) return true;
    return message.sender_id === this.myId && this.can("realm_can_delete_own_message_group") &&
      withinLimit(this.realm.realm_message_content_delete_limit_seconds, message.timestamp, now);
  }

  canMoveTopic(message, now = Date.now() / 1000) {
    if (message.type !== "stream" || !this.can("realm_can_move_messages_between_topics_group")) return false;
    return this.isModerator || withinLimit(this.realm.realm_move_messages_within_stream_limit_seconds, message.timestamp, now);
  }

  canMoveChannel(message, now = Date.now() / 1000) {
    if (message.type !== "stream" || !this.can("realm_can_move_messages_between_channels_group")) return false;
    return this.isModerator || withinLimit(this.realm.realm_move_messages_between_streams_limit_seconds, message.timestamp, now);
  }

  canResolve(message) {
    return message.type === "stream" && (this.can("realm_can_resolve_topics_group") || this.canMoveTopic(message));
  }
}
